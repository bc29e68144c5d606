#!/usr/bin/env bash
# with-testbed.sh CMD...: run CMD with KUBECONFIG pointing at a testbed. Uses $KUBECONFIG when
# set; otherwise starts the testbed and stops it afterwards, unless it was already running.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -n "${KUBECONFIG:-}" ]; then exec "$@"; fi
dir=${TESTBED_DIR:-.testbed}
[[ $dir == /* ]] || dir=$PWD/$dir
export KUBECONFIG=$dir/kubeconfig
if bin/testbed/kubectl get --raw /readyz >/dev/null 2>&1; then exec "$@"; fi
trap 'bin/testbedctl down' EXIT
bin/testbedctl up
"$@"
