#!/usr/bin/env bash
# release-push.sh: make release-push. Pushes what make release wrote to dist/ to a registry:
#
#   HELM=... RELEASE_TOOL=... hack/release-push.sh VERSION REGISTRY      (REGISTRY = host[:port]/prefix)
#
#   REGISTRY/<name>:VERSION                 each add-on's index (linux/amd64, linux/arm64), the
#                                           very bytes of dist/images: the digests do not change
#   REGISTRY/<name>:sha256-<hex>.sbom       the SPDX SBOM of the index and of each platform's image
#   oci://REGISTRY/jobset-addons:X.Y.Z      the chart (helm push), its images pointing at REGISTRY
#                                           (re-pointed when make release was given another one)
#
# dist/ must be a release of VERSION whose files match its SHA256SUMS. Credentials: docker's and
# helm's own (docker login / helm registry login). A registry on localhost or 127.0.0.1 is
# spoken to over plain HTTP.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
VERSION=${1:-} REGISTRY=${2:-}
die() { echo "release-push: $*" >&2; exit 1; }
[[ -n $VERSION && -n $REGISTRY ]] || die "usage: make release-push VERSION=vX.Y.Z REGISTRY=host[:port]/prefix"
grep -q "^volumeclaims:$VERSION " dist/images.digests 2>/dev/null || die "dist/ holds no release $VERSION: make release VERSION=$VERSION first"
(cd dist && sha256sum --quiet -c SHA256SUMS) || die "dist/ does not match its SHA256SUMS"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
chart=$tmp/jobset-addons-${VERSION#v}.tgz
"$RELEASE_TOOL" push dist "$VERSION" "$REGISTRY" "$chart"
plain=()
case $REGISTRY in localhost:* | localhost/* | 127.0.0.1:* | 127.0.0.1/*) plain=(--plain-http) ;; esac
"$HELM" push "$chart" "oci://$REGISTRY" "${plain[@]}"
echo "release-push: $VERSION pushed to $REGISTRY: helm install jobset-addons oci://$REGISTRY/jobset-addons --version ${VERSION#v}"
