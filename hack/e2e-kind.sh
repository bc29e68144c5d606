#!/usr/bin/env bash
# e2e-kind.sh: the e2e suites against a kind cluster, with the four controllers installed in it
# by the Helm chart from images ko builds (make e2e-kind).
#
#   hack/e2e-kind.sh KIND KO HELM KUBECTL TESTBEDCTL
#
# Needs a Docker engine, and the network for kind's node image, JobSet's and kwok's release
# manifests and ko's base image. Without a Docker engine it prints one line saying it was
# skipped and exits 0 having built, installed and tested nothing: that is not a pass.
#
# The cluster gets what the suites expect of the testbed: JobSet v0.12.0, kwok in the cluster
# with the testbed's stages and fake nodes (pods run, complete and fail as on the testbed; the
# kind node is cordoned once the controllers run, so test pods land on fake nodes), the
# controller-manager's hostpath provisioner as the default StorageClass, and the gang
# schedulers' CRDs (podgroups' webhooks need them; the schedulers themselves do not run here,
# so podgroups' gang tests are left to the testbed). The suites run with E2E_ADDONS=installed:
# they start no controller; the few tests that kill or reconfigure one skip, saying so.
#
#   KIND_CLUSTER_NAME (jobset-addons-e2e)  E2E_KIND_KEEP=1 leaves the cluster running
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

if ! docker info >/dev/null 2>&1; then
	echo "e2e-kind: SKIPPED, not passed: no Docker engine on this machine ('docker info' fails), so no kind cluster; nothing was built, installed or tested"
	exit 0
fi

KIND=$1 KO=$2 HELM=$3 KUBECTL=$4 TESTBEDCTL=$5
CLUSTER=${KIND_CLUSTER_NAME:-jobset-addons-e2e}
JOBSET_MANIFESTS=https://github.com/kubernetes-sigs/jobset/releases/download/v0.12.0/manifests.yaml
KWOK_MANIFESTS=https://github.com/kubernetes-sigs/kwok/releases/download/v0.8.0/kwok.yaml
NS=jobset-addons-system
WORK=$PWD/bin/kind-e2e
mkdir -p "$WORK"
export KUBECONFIG=$WORK/kubeconfig
step() { echo "==> e2e-kind: $*"; }

cleanup() {
	if [[ -z ${E2E_KIND_KEEP:-} ]]; then
		step "deleting kind cluster $CLUSTER"
		"$KIND" delete cluster --name "$CLUSTER" >/dev/null 2>&1 || true
	fi
}
trap cleanup EXIT

# kind v0.33's node images run Kubernetes 1.31 or later, configured by kubeadm v1beta4 (extraArgs
# is a list there).
step "kind cluster $CLUSTER, with the controller-manager's hostpath provisioner"
cat >"$WORK/kind.yaml" <<'EOF'
kind: Cluster
apiVersion: kind.x-k8s.io/v1alpha4
kubeadmConfigPatches:
  - |
    kind: ClusterConfiguration
    apiVersion: kubeadm.k8s.io/v1beta4
    controllerManager:
      extraArgs:
        - name: enable-hostpath-provisioner
          value: "true"
EOF
"$KIND" delete cluster --name "$CLUSTER" >/dev/null 2>&1 || true
"$KIND" create cluster --name "$CLUSTER" --config "$WORK/kind.yaml" --kubeconfig "$KUBECONFIG" --wait 180s

step "JobSet v0.12.0 and kwok v0.8.0 from their releases, with the testbed's stages and nodes"
"$KUBECTL" apply --server-side -f "$JOBSET_MANIFESTS"
"$KUBECTL" apply --server-side -f "$KWOK_MANIFESTS"
"$TESTBEDCTL" kwok-stages | "$KUBECTL" apply --server-side -f -
"$KUBECTL" delete storageclass standard --ignore-not-found
"$KUBECTL" apply --server-side -f bin/testbed/volcano-crds/ -f bin/testbed/scheduler-plugins-crds/
"$KUBECTL" -n jobset-system rollout status deploy/jobset-controller-manager --timeout=180s
"$KUBECTL" -n kube-system rollout status deploy/kwok-controller --timeout=180s
"$TESTBEDCTL" fit-cluster "${TESTBED_NODES:-4}"

step "images: ko builds each controller and loads it into the kind nodes as kind.local/NAME:e2e"
for c in volumeclaims resourceclaims sequencer podgroups; do
	(cd "controllers/$c" && GOWORK=off KO_DOCKER_REPO=kind.local/$c KIND_CLUSTER_NAME=$CLUSTER \
		"$KO" build --bare --tags e2e --platform linux/amd64 .)
done

step "the chart, with hack/kind/values.yaml"
"$HELM" install jsa charts/jobset-addons --namespace "$NS" --create-namespace -f hack/kind/values.yaml --wait --timeout 5m
# From now on, test pods go to the fake nodes only.
"$KUBECTL" cordon -l '!type'

step "e2e suites, E2E_ADDONS=installed"
# podgroups: admission only (its gang tests need Volcano's and coscheduling's schedulers).
cd e2e
E2E_ADDONS=installed GOWORK=off go test -count=1 -p 1 -timeout 40m -v \
	./suites/volumeclaims/ ./suites/sequencer/ ./suites/resourceclaims/ 2>&1 | ../hack/test-summary.sh
E2E_ADDONS=installed GOWORK=off go test -count=1 -timeout 10m -v \
	-run 'TestBadInputRefused|TestAnnotationsImmutable|TestPlainJobSetNeverReachesWebhooks' ./suites/podgroups/ 2>&1 | ../hack/test-summary.sh
step "passed"
