#!/usr/bin/env bash
# rootfs.sh: the Debian root filesystem of the kind node image (hack/kind/node-image.sh) and of
# the images built from it (hack/kind/images.sh), made by debootstrap from the mirror apt is
# already configured with; cached as bin/kind/rootfs-<hash of suite and packages>.tar. Prints
# the tarball's path.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
# The packages kind's base image installs that a node here needs (no NFS, iSCSI or fuse), plus
# busybox-static for the test workload image.
PACKAGES=systemd,systemd-sysv,dbus,iproute2,iptables,nftables,ca-certificates,mount,kmod,procps,runc,containernetworking-plugins,conntrack,ethtool,socat,util-linux,libseccomp2,pigz,jq,curl,e2fsprogs,busybox-static
SUITE=bookworm
MIRROR=$(sed -n 's/^URIs: *//p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -1)
MIRROR=${MIRROR:-$(awk '$1 == "deb" {print $2; exit}' /etc/apt/sources.list 2>/dev/null)}
MIRROR=${MIRROR:-http://deb.debian.org/debian}
WORK=$PWD/bin/kind
mkdir -p "$WORK"
key=$(echo "$SUITE $PACKAGES" | sha256sum | cut -c1-16)
tarball=$WORK/rootfs-$key.tar
if [[ ! -f $tarball ]]; then
	command -v debootstrap >/dev/null || { echo "rootfs: debootstrap is not installed (apt-get install debootstrap)" >&2; exit 1; }
	start=$(date +%s)
	echo "rootfs: debootstrap $SUITE from $MIRROR" >&2
	dir=$(mktemp -d "$WORK/rootfs.XXXXXX")
	trap 'rm -rf "$dir"' EXIT
	debootstrap --variant=minbase --include="$PACKAGES" "$SUITE" "$dir" "$MIRROR" >"$WORK/debootstrap.log" 2>&1 ||
		{ tail -20 "$WORK/debootstrap.log" >&2; exit 1; }
	rm -rf "$dir"/var/cache/apt/archives/*.deb "$dir"/var/lib/apt/lists/*
	tar -C "$dir" -cf "$tarball.tmp" .
	mv "$tarball.tmp" "$tarball"
	echo "rootfs: $tarball in $(($(date +%s) - start))s" >&2
fi
echo "$tarball"
