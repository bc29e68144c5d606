#!/usr/bin/env bash
# node-image.sh: builds, with no registry and no network but Debian's mirror, a kind node image for
# Kubernetes $KUBE_VERSION, and prints its name. make kind-image runs it.
#
#   hack/kind/node-image.sh KIND_MODULE_DIR KUBE_BIN_DIR CONTAINERD_BIN_DIR ETCD PAUSE
#
# The image is what kind's own node images are, rebuilt from parts this machine can get:
#   - a Debian bookworm root filesystem made by debootstrap from the mirror apt already uses
#     (systemd, iptables, runc, CNI plugins, ... the packages kind's base image installs);
#   - kind's base-image files, unchanged, from the sigs.k8s.io/kind module (its entrypoint, systemd
#     units, containerd config), and the containerd OCI spec its Dockerfile makes;
#   - containerd v2 and the Kubernetes binaries (kubelet, kubeadm, kubectl, and the control plane's)
#     built from Go modules by the Makefile, as the testbed's are;
#   - the control plane's images preloaded in the node's containerd: kube-apiserver,
#     kube-controller-manager, kube-scheduler and etcd FROM scratch, kube-proxy on the Debian root
#     filesystem, and pause (e2e/kindbed/images/pause) under the tags kubeadm and kind's containerd ask for;
#   - a bridge CNI config template (/kind/cni: the cluster runs without kindnetd, disableDefaultCNI;
#     e2e/kindbed writes each node's own from its podCIDR and routes the other nodes' pod CIDRs) and a first
#     entrypoint (hack/kind/node/entrypoint) that makes read-only cgroup v1 hierarchies writable,
#     a kubeadm (hack/kind/node/kubeadm) that waits for containerd before it runs, and the default
#     StorageClass kind applies (hack/kind/node/default-storage.yaml: WaitForFirstConsumer).
# Everything else a cluster needs (JobSet, the add-ons, the DRA driver, coscheduling, the test
# workload) is loaded by kind after the cluster is up, so that one path serves this image and an
# official kindest/node image alike.
#
# Cached by content: the name's tag is a hash of every input, and an image already in the Docker
# engine is reused; hack/kind/rootfs.sh caches the Debian root filesystem.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

KIND_MOD=$1 KUBE_BIN=$2 CONTAINERD_BIN=$3 ETCD=$4 PAUSE=$5
KUBE_VERSION=$("$KUBE_BIN/kubeadm" version -o short)
WORK=$PWD/bin/kind
mkdir -p "$WORK"
log() { echo "kind-image: $*" >&2; }
start=$(date +%s)
# dbuild ARGS...: docker build, quiet unless it fails (docker 20.10 without buildx warns on every
# build that its legacy builder is deprecated).
dbuild() { docker build -q "$@" >"$WORK/build.log" 2>&1 || { cat "$WORK/build.log" >&2; return 1; }; }

# 1. The Debian root filesystem, imported as an image.
ROOTFS=$(hack/kind/rootfs.sh)
rootfs_key=$(basename "$ROOTFS" .tar)
rootfs_key=${rootfs_key#rootfs-}
ROOTFS_IMAGE=jobset-addons/kind-rootfs:$rootfs_key
docker image inspect "$ROOTFS_IMAGE" >/dev/null 2>&1 || docker import "$ROOTFS" "$ROOTFS_IMAGE" >/dev/null

# 2. The node image's inputs, and its name.
ctx=$(mktemp -d "$WORK/node.XXXXXX")
trap 'rm -rf "$ctx"' EXIT
cp -r "$KIND_MOD/images/base/files" "$ctx/files"
chmod -R u+w "$ctx/files"
mkdir -p "$ctx/bin"
for b in kubelet kubeadm kubectl kube-apiserver kube-controller-manager kube-scheduler kube-proxy; do
	cp "$KUBE_BIN/$b" "$ctx/bin/"
done
cp "$CONTAINERD_BIN"/{containerd,containerd-shim-runc-v2,ctr,crictl} "$ETCD" "$PAUSE" "$ctx/bin/"
cp hack/kind/node/* "$ctx/"
key=$(cd "$ctx" && find . -type f | sort | xargs sha256sum | sha256sum | cut -c1-16)
key=$(echo "$key $rootfs_key $(sha256sum "$0" hack/kind/rootfs.sh)" | sha256sum | cut -c1-16)
IMAGE=jobset-addons/kind-node:$KUBE_VERSION-$key
if docker image inspect "$IMAGE" >/dev/null 2>&1; then
	log "$IMAGE is built (cached)"
	echo "$IMAGE"
	exit 0
fi
log "building $IMAGE"

# 3. The control plane's images, as kubeadm names them.
"$CONTAINERD_BIN/ctr" oci spec |
	jq '.hooks.createContainer[.hooks.createContainer | length] |= . + {"path": "/kind/bin/mount-product-files.sh"}' |
	jq 'del(.process.rlimits)' >"$ctx/cri-base.json"
images=()
mapfile -t wanted < <("$KUBE_BIN/kubeadm" config images list --kubernetes-version "$KUBE_VERSION")
# kind's containerd config names its own sandbox image; kubeadm may ask for a newer pause.
wanted+=("$(sed -n 's/^ *sandbox_image *= *"\(.*\)"/\1/p' "$ctx/files/etc/containerd/config.toml")")
for ref in "${wanted[@]}"; do
	name=${ref##*/}
	name=${name%%:*}
	case $name in
	kube-apiserver | kube-controller-manager | kube-scheduler | etcd | pause)
		bin=$name
		[[ $name == pause ]] && bin=pause
		printf 'FROM scratch\nCOPY bin/%s /usr/local/bin/%s\nENV PATH=/usr/local/bin\n%s\n' "$bin" "$bin" \
			"$([[ $name == pause ]] && echo 'ENTRYPOINT ["/usr/local/bin/pause"]')" >"$ctx/Dockerfile.$name"
		;;
	kube-proxy)
		printf 'FROM %s\nCOPY bin/kube-proxy /usr/local/bin/kube-proxy.bin\nCOPY kube-proxy /usr/local/bin/kube-proxy\n' \
			"$ROOTFS_IMAGE" >"$ctx/Dockerfile.$name"
		;;
	coredns) continue ;; # not run: the cluster is made with kubeadm's addon/coredns phase skipped
	*) log "kubeadm asks for $ref, which this script does not build"; exit 1 ;;
	esac
	dbuild -t "$ref" -f "$ctx/Dockerfile.$name" "$ctx"
	images+=("$ref")
done
docker save -o "$ctx/images.tar" "${images[@]}"

# 4. The node image.
cat >"$ctx/Dockerfile" <<EOF
FROM $ROOTFS_IMAGE
COPY files/usr/local/bin/ /usr/local/bin/
COPY files/kind/ /kind/
COPY files/etc/ /etc/
COPY entrypoint /usr/local/bin/jobset-addons-entrypoint
COPY kubeadm /usr/local/bin/kubeadm
COPY default-storage.yaml /kind/manifests/default-storage.yaml
COPY cri-base.json /etc/containerd/cri-base.json
COPY 10-bridge.conflist /kind/cni/10-bridge.conflist
COPY bin/kubelet bin/kubeadm bin/kubectl /usr/bin/
COPY bin/containerd bin/containerd-shim-runc-v2 bin/ctr bin/crictl /usr/local/bin/
RUN chmod 755 /kind /kind/bin /kind/bin/* /usr/local/bin/* \\
 && find /lib/systemd/system/sysinit.target.wants/ -name systemd-tmpfiles-setup.service -delete \\
 && rm -f /lib/systemd/system/multi-user.target.wants/* /etc/systemd/system/*.wants/* \\
    /lib/systemd/system/local-fs.target.wants/* /lib/systemd/system/sockets.target.wants/*udev* \\
    /lib/systemd/system/sockets.target.wants/*initctl* /lib/systemd/system/basic.target.wants/* \\
 && echo ReadKMsg=no >>/etc/systemd/journald.conf \\
 && systemctl enable kubelet.service containerd.service undo-mount-hacks.service \\
 && systemctl mask systemd-binfmt.service \\
 && mkdir -p /etc/kubernetes/manifests /opt/cni /etc/cni/net.d \\
 && ln -s /usr/lib/cni /opt/cni/bin \\
 && echo $KUBE_VERSION >/kind/version
ENV container=docker
STOPSIGNAL SIGRTMIN+3
ENTRYPOINT ["/usr/local/bin/jobset-addons-entrypoint", "/usr/local/bin/entrypoint", "/sbin/init"]
EOF
dbuild -t "$IMAGE.unloaded" "$ctx"

# 5. The images into the node's containerd (not unpacked: the kubelet unpacks on first use), by a
# containerd started in a container of the image, then committed, as kind's node-image build does.
cid=$(docker run -d --entrypoint sleep -v "$ctx/images.tar:/images.tar:ro" "$IMAGE.unloaded" infinity)
trap 'docker rm -f "$cid" >/dev/null 2>&1 || true; rm -rf "$ctx"' EXIT
docker exec "$cid" bash -c 'nohup containerd >/tmp/containerd.log 2>&1 </dev/null &
	for i in $(seq 50); do [[ -S /run/containerd/containerd.sock ]] && break; sleep 0.2; done
	ctr --namespace=k8s.io images import --no-unpack --digests --label=io.cri-containerd.pinned=pinned /images.tar >/dev/null
	ctr --namespace=k8s.io images list -q | grep -E "^import-" | xargs -r ctr --namespace=k8s.io images rm >/dev/null
	ctr --namespace=k8s.io images list -q | grep -v "^sha256:"
	pkill containerd; while pgrep -x containerd >/dev/null; do sleep 0.2; done 2>/dev/null
	rm -f /tmp/containerd.log' 2>&1 | grep -v "level=warning msg=\"DEPRECATION" >&2
docker commit \
	--change 'ENTRYPOINT ["/usr/local/bin/jobset-addons-entrypoint", "/usr/local/bin/entrypoint", "/sbin/init"]' \
	--change 'CMD []' "$cid" "$IMAGE" >/dev/null
docker rm -f "$cid" >/dev/null
docker rmi "$IMAGE.unloaded" >/dev/null
log "built $IMAGE in $(($(date +%s) - start))s"
echo "$IMAGE"
