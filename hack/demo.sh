#!/usr/bin/env bash
# make demo: start the testbed, run every controller built so far, apply examples/, and show
# what happened. The testbed keeps running afterwards; `make testbed-down` stops it all.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
K="$ROOT/bin/testbed/kubectl"
NS=jobset-addons-system

bin/testbedctl up
export KUBECONFIG=$ROOT/.testbed/kubeconfig

for c in volumeclaims resourceclaims sequencer podgroups; do
	bin/testbedctl addon "$c"
done

echo
echo "== kubectl apply -f examples/"
"$K" apply --server-side -f examples/
echo
echo "== waiting for the example JobSets to finish"
"$K" wait --for=condition=Completed jobsets --all -A --timeout=180s

echo
echo "== nodes"
"$K" get nodes -o wide
echo
echo "== JobSets, Jobs and pods"
"$K" get jobsets,jobs,pods -A -l '!kwok.x-k8s.io/node' 2>/dev/null || "$K" get jobsets,jobs,pods -A
echo
echo "== leader election: one Lease per controller"
"$K" get leases -n "$NS"
echo
echo "The testbed is still running. To look around:"
echo "  export KUBECONFIG=$KUBECONFIG PATH=$ROOT/bin/testbed:\$PATH"
echo "Stop it with: make testbed-down"
