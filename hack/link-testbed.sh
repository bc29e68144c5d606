#!/usr/bin/env bash
# link-testbed.sh DIR JOBSET_VERSION JOBSET_SRC VOLCANO_SRC SCHEDPLUGINS_SRC BIN...
# Fills DIR, the one directory a testbed reads (bin/testbed, or bin/testbed-<kube>-<jobset> for
# make e2e SUITE=compat): links to the versioned binaries BIN..., JobSet's CRD and webhook manifests
# from its module source, the gang schedulers' CRDs, and jobset-version (testbed.JobSetVersion).
set -euo pipefail
dir=$1 jobset_version=$2 jobset_src=$3 volcano_src=$4 schedplugins_src=$5
shift 5
rm -rf "$dir" && mkdir -p "$dir"
for f in "$@"; do ln -s "$f" "$dir/"; done
cp "$jobset_src/config/components/crd/bases/jobset.x-k8s.io_jobsets.yaml" "$dir/jobset-crd.yaml"
cp "$jobset_src/config/components/webhook/manifests.yaml" "$dir/jobset-webhooks.yaml"
echo "$jobset_version" >"$dir/jobset-version"
mkdir -p "$dir/volcano-crds" "$dir/scheduler-plugins-crds"
cp "$volcano_src"/config/crd/volcano/bases/*.yaml "$dir/volcano-crds/"
cp "$schedplugins_src"/config/crd/bases/*.yaml "$dir/scheduler-plugins-crds/"
chmod u+w "$dir"/*.yaml "$dir"/volcano-crds/*.yaml "$dir"/scheduler-plugins-crds/*.yaml
