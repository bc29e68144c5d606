#!/usr/bin/env bash
# link-testbed.sh core DIR JOBSET_VERSION JOBSET_SRC BIN...
# link-testbed.sh gang DIR VOLCANO_SRC SCHEDPLUGINS_SRC BIN...
# Fills DIR, the one directory a testbed reads (bin/testbed, or bin/testbed-<kube>-<jobset> for
# make e2e SUITE=compat), with links to the versioned binaries BIN...
#   core: DIR anew, with JobSet's CRD and webhook manifests from its module source and
#         jobset-version (testbed.JobSetVersion): what a testbed runs.
#   gang: added to DIR: the gang schedulers and their CRDs (testbedctl gang).
set -euo pipefail
mode=$1 dir=$2
case $mode in
core)
	jobset_version=$3 jobset_src=$4
	shift 4
	rm -rf "$dir" && mkdir -p "$dir"
	for f in "$@"; do ln -s "$f" "$dir/"; done
	cp "$jobset_src/config/components/crd/bases/jobset.x-k8s.io_jobsets.yaml" "$dir/jobset-crd.yaml"
	cp "$jobset_src/config/components/webhook/manifests.yaml" "$dir/jobset-webhooks.yaml"
	chmod u+w "$dir"/*.yaml
	echo "$jobset_version" >"$dir/jobset-version"
	;;
gang)
	volcano_src=$3 schedplugins_src=$4
	shift 4
	for f in "$@"; do ln -sf "$f" "$dir/"; done
	rm -rf "$dir/volcano-crds" "$dir/scheduler-plugins-crds"
	mkdir -p "$dir/volcano-crds" "$dir/scheduler-plugins-crds"
	cp "$volcano_src"/config/crd/volcano/bases/*.yaml "$dir/volcano-crds/"
	cp "$schedplugins_src"/config/crd/bases/*.yaml "$dir/scheduler-plugins-crds/"
	chmod u+w "$dir"/volcano-crds/*.yaml "$dir"/scheduler-plugins-crds/*.yaml
	;;
*)
	echo "usage: $0 core|gang DIR ..." >&2
	exit 2
	;;
esac
