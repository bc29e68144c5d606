#!/usr/bin/env bash
# build-tool.sh MODULE_DIR OUT_FILE PKG [LDFLAGS]
# Builds one tool package of a wrapper module under tools/ into OUT_FILE, atomically:
# a half-built binary never sits in the cache.
set -euo pipefail
mod=$1 out=$2 pkg=$3 ldflags=${4:-}
mkdir -p "$(dirname "$out")"
start=$(date +%s)
(cd "$mod" && GOWORK=off CGO_ENABLED=0 go build -trimpath -ldflags "-s -w $ldflags" -o "$out.tmp" "$pkg")
mv "$out.tmp" "$out"
echo "built $out in $(( $(date +%s) - start ))s"
