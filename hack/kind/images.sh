#!/usr/bin/env bash
# images.sh: builds into the local Docker engine every image a kind cluster of make e2e-kind or
# DEMO_CLUSTER=kind make demo loads after it is up, with no registry:
#
#   hack/kind/images.sh KO ROOTFS_TAR
#
#   kind.local/base:e2e                       ko's base image, FROM scratch: CA certificates and a
#                                             nonroot user (65532) from the node's Debian root
#                                             filesystem (ko's default base cannot be pulled here)
#   kind.local/{volumeclaims,resourceclaims,sequencer,podgroups}:e2e   the add-ons, by ko
#   kind.local/barrier:e2e                    the sequencer's start barrier (controllers/sequencer/barrier), by ko
#   kind.local/dra-driver:e2e                 e2e/kindbed/images/dra-driver, a DRA driver, by ko
#   kind.local/rendezvous:e2e                 e2e/kindbed/images/rendezvous, the distributed-start workload, by ko
#   kind.local/coredns:e2e                    CoreDNS (tools/coredns: only the plugins its Corefile names), by ko: the cluster's DNS on the
#                                             offline node image (e2e/kindbed/manifests/coredns.yaml)
#   kind.local/scheduler-plugins:e2e          scheduler-plugins' scheduler (tools/schedplugins), by ko
#   kind.local/trainer:e2e                    Kubeflow Trainer's controller manager (tools/trainer), by ko, unless
#                                             KIND_REDUCED is set: loaded only by the case that installs Trainer
#                                             (kindbed.InstallTrainer), which the reduced run leaves out
#   $JOBSET_IMAGE                             JobSet (tools/jobset), by ko, under the name its own
#                                             manifests use and with the binary where they run it
#                                             (/manager), so that they install unchanged
#   kind.local/busybox:e2e                    the test workload: Debian's busybox-static FROM scratch
#
# ko reads the Go build cache, so a rebuild of unchanged code takes seconds.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
KO=$1 ROOTFS_TAR=$2
JOBSET_IMAGE=${JOBSET_IMAGE:-us-central1-docker.pkg.dev/k8s-staging-images/jobset/jobset:v0.12.0}
PLATFORM=linux/$(go env GOARCH)
start=$(date +%s)
log() { echo "kind-images: $*" >&2; }
dbuild() { docker build -q "$@" >"$ctx/build.log" 2>&1 || { cat "$ctx/build.log" >&2; return 1; }; }

ctx=$(mktemp -d)
trap 'rm -rf "$ctx"' EXIT
tar -C "$ctx" -xf "$ROOTFS_TAR" ./etc/ssl/certs/ca-certificates.crt ./usr/bin/busybox
mkdir -p "$ctx/base/etc/ssl/certs" "$ctx/busybox/bin"
cp "$ctx/etc/ssl/certs/ca-certificates.crt" "$ctx/base/etc/ssl/certs/"
printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' >"$ctx/base/etc/passwd"
printf 'root:x:0:\nnonroot:x:65532:\n' >"$ctx/base/etc/group"
printf 'FROM scratch\nCOPY etc /etc\nUSER 65532:65532\n' >"$ctx/base/Dockerfile"
dbuild -t kind.local/base:e2e "$ctx/base"
cp "$ctx/usr/bin/busybox" "$ctx/busybox/bin/"
printf 'FROM scratch\nCOPY bin /bin\nRUN ["/bin/busybox", "--install", "-s", "/bin"]\nRUN mkdir -m 1777 /tmp\nENTRYPOINT ["/bin/sh"]\n' >"$ctx/busybox/Dockerfile"
dbuild -t kind.local/busybox:e2e "$ctx/busybox"

# ko_build DIR PACKAGE IMAGE: the package, built in module DIR, tagged IMAGE in the Docker engine.
ko_build() {
	local built
	built=$(cd "$1" && GOWORK=off KO_DOCKER_REPO=ko.local KO_DEFAULTBASEIMAGE=ko.local/base:e2e \
		"$KO" build --sbom=none --platform "$PLATFORM" --tags e2e --preserve-import-paths "$2" 2>"$ctx/ko.log") ||
		{ cat "$ctx/ko.log" >&2; exit 1; }
	docker tag "$built" "$3"
	log "$3 <- $2"
}
docker tag kind.local/base:e2e ko.local/base:e2e
for c in volumeclaims resourceclaims sequencer podgroups; do
	ko_build "controllers/$c" . "kind.local/$c:e2e"
done
ko_build controllers/sequencer ./barrier kind.local/barrier:e2e
ko_build e2e ./kindbed/images/dra-driver kind.local/dra-driver:e2e
ko_build e2e ./kindbed/images/rendezvous kind.local/rendezvous:e2e
ko_build tools/coredns . kind.local/coredns:e2e
ko_build tools/schedplugins sigs.k8s.io/scheduler-plugins/cmd/scheduler kind.local/scheduler-plugins:e2e
# Only the full kind suite installs Trainer (make e2e-kind without KIND_REDUCED).
if [[ -z ${KIND_REDUCED:-} ]]; then
	ko_build tools/trainer github.com/kubeflow/trainer/v2/cmd/trainer-controller-manager kind.local/trainer:e2e
fi
# JobSet's manifests run /manager; ko puts the binary at /ko-app/jobset.
ko_build tools/jobset sigs.k8s.io/jobset kind.local/jobset-ko:e2e
printf 'FROM kind.local/jobset-ko:e2e\nCOPY --from=kind.local/jobset-ko:e2e /ko-app/jobset /manager\n' >"$ctx/Dockerfile.jobset"
dbuild -t "$JOBSET_IMAGE" -f "$ctx/Dockerfile.jobset" "$ctx"
log "$JOBSET_IMAGE <- kind.local/jobset-ko:e2e, with /manager"
log "built in $(($(date +%s) - start))s"
