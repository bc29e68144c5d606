#!/usr/bin/env bash
# build-tool.sh MODULE_DIR OUT PKGS [LDFLAGS]
# Builds tool packages of a wrapper module under tools/ with one `go build`: PKGS is one package
# (OUT the binary) or several, space-separated (OUT a directory ending in /, each binary named
# after the last element of its package path). One go build for binaries of one module compiles
# their shared packages once and links them while it compiles the rest. Atomic: a half-built
# binary never sits in the cache.
set -euo pipefail
mod=$1 out=$2 ldflags=${4:-}
read -ra pkgs <<<"$3"
mkdir -p "$(dirname "${out%/}")"
tmp=$(mktemp -d "$(dirname "${out%/}")/.build-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
dest=$tmp/
[[ $out == */ ]] || dest=$tmp/$(basename "$out")
start=$(date +%s)
(cd "$mod" && GOWORK=off CGO_ENABLED=0 go build -trimpath -ldflags "-s -w $ldflags" -o "$dest" "${pkgs[@]}")
if [[ $out == */ ]]; then
	mkdir -p "$out"
	for f in "$tmp"/*; do mv -f "$f" "$out"; done
else
	mv -f "$dest" "$out"
fi
# The CPU time of the build (its processes' user and system time), beside the wall time: on a
# busy machine the wall time says little.
times >"$tmp/times"
cpu=$(awk 'NR == 2 { split($1 " " $2, t, /[ms ]+/); printf "%d", t[1] * 60 + t[2] + t[3] * 60 + t[4] }' "$tmp/times")
echo "built ${out%/} (${pkgs[*]##*/}) in $(( $(date +%s) - start ))s, ${cpu}s of CPU"
