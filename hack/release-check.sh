#!/usr/bin/env bash
# release-check.sh: make release-check. Proves the release of dist/ installs from a registry: it
# starts an OCI registry on the host (go-containerregistry's, in memory, hack/release; on
# 127.0.0.1, or on every address where a kind node must reach it), runs make release-push to it,
# then, as a user would:
#
#   push      hack/release-push.sh VERSION 127.0.0.1:PORT/jobset-addons (localhost:PORT with kind)
#   pull      helm pull oci://127.0.0.1:PORT/jobset-addons/jobset-addons --version X.Y.Z: the chart
#             says version X.Y.Z, appVersion VERSION
#   template  helm template oci://... : every add-on's Deployment runs
#             127.0.0.1:PORT/jobset-addons/<name>:VERSION@<the digest in dist/>, and that digest
#             resolves in the registry to a linux/amd64 + linux/arm64 index with its SBOMs
#   tamper    the same check on a render with one digest changed must fail
#   dry-run   only with KUBECONFIG: kubectl apply --server-side --dry-run=server of that render
#   kind      only where a Docker engine answers (RELEASE_CHECK_KIND=0: not even then): make
#             e2e-kind-release, a kind cluster whose containerd pulls localhost:PORT from the
#             host's registry (kind's local-registry guide), the chart installed from
#             oci://localhost:PORT by helm, and the kind suite's add-on pods (each runs the
#             digest dist/ holds) and one JobSet per add-on on real pods
#   refusals  in a clone of HEAD: make release refuses a version without a CHANGELOG section and
#             a dirty tree, and accepts VERSION
#
#   HELM=... RELEASE_TOOL=... [KUBECONFIG=... KUBECTL=...] hack/release-check.sh VERSION
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$PWD
VERSION=${1:-}
start=$(date +%s)
die() { echo "release-check: FAIL: $*" >&2; exit 1; }
ok() { echo "ok    $1"; }
[[ -n $VERSION ]] || die "usage: make release-check VERSION=vX.Y.Z (after make release VERSION=vX.Y.Z)"
grep -q "^volumeclaims:$VERSION " dist/images.digests 2>/dev/null || die "dist/ holds no release $VERSION: make release VERSION=$VERSION first"

tmp=$(mktemp -d)
pid=
cleanup() { [[ -n $pid ]] && kill "$pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
# helm keeps its registry credentials and cache here, not in the user's home.
export HELM_CONFIG_HOME=$tmp/helm/config HELM_CACHE_HOME=$tmp/helm/cache HELM_DATA_HOME=$tmp/helm/data
kind=false
if [[ ${RELEASE_CHECK_KIND:-1} != 0 ]] && docker info >/dev/null 2>&1; then kind=true; fi
listen=127.0.0.1:0
$kind && listen=0.0.0.0:0 # the kind node reaches the host at its network's gateway
"$RELEASE_TOOL" registry "$tmp/addr" "$listen" &
pid=$!
for _ in $(seq 100); do [[ -s $tmp/addr ]] && break; sleep 0.1; done
[[ -s $tmp/addr ]] || die "the registry did not start"
REGHOST=$(cat "$tmp/addr")
# The name in image references: localhost:PORT, which the node's containerd maps to the host.
$kind && REGHOST=localhost:${REGHOST##*:}
REG=$REGHOST/jobset-addons
CHART_VERSION=${VERSION#v}

hack/release-push.sh "$VERSION" "$REG" >"$tmp/push.log" 2>&1 || { cat "$tmp/push.log"; die "make release-push to $REG"; }
ok "push      $(grep -c '^pushed' "$tmp/push.log") manifests and the chart to $REG ($(($(date +%s) - start))s)"

mkdir -p "$tmp/pulled"
"$HELM" pull "oci://$REG/jobset-addons" --version "$CHART_VERSION" --plain-http -d "$tmp/pulled" >"$tmp/pull.log" 2>&1 ||
	{ cat "$tmp/pull.log"; die "helm pull"; }
meta=$("$HELM" show chart "$tmp/pulled/jobset-addons-$CHART_VERSION.tgz")
grep -qx "version: $CHART_VERSION" <<<"$meta" && grep -qx "appVersion: $VERSION" <<<"$meta" ||
	die "the pulled chart says $(grep -E '^(version|appVersion):' <<<"$meta" | tr '\n' ' '), want version $CHART_VERSION, appVersion $VERSION"
ok "pull      oci://$REG/jobset-addons version $CHART_VERSION, appVersion $VERSION"

"$HELM" template jsa "oci://$REG/jobset-addons" --version "$CHART_VERSION" --plain-http -n jobset-addons-system >"$tmp/render.yaml" 2>"$tmp/template.log" ||
	{ cat "$tmp/template.log"; die "helm template oci://$REG/jobset-addons"; }
"$RELEASE_TOOL" check-render "$tmp/render.yaml" "$REG" "$VERSION" dist/images.digests | sed 's/^/          /'
ok "template  every image pinned to the digest in dist/, resolving in the registry with its SBOMs"

"$HELM" template jsa "$tmp/pulled/jobset-addons-$CHART_VERSION.tgz" -n jobset-addons-system \
	--set "sequencer.image.digest=sha256:$(printf '0%.0s' {1..64})" >"$tmp/tampered.yaml"
if "$RELEASE_TOOL" check-render "$tmp/tampered.yaml" "$REG" "$VERSION" dist/images.digests >"$tmp/tamper.log" 2>&1; then
	die "a render with sequencer's digest changed passed the check"
fi
ok "tamper    a render with another digest fails the check: $(grep -o 'sequencer: the render runs [^ ]*' "$tmp/tamper.log" | head -1 | cut -c1-60)..."

# With a cluster (KUBECONFIG), the API server takes the render from the registry.
if [[ -n ${KUBECONFIG:-} ]]; then
	KUBECTL=${KUBECTL:-kubectl}
	"$KUBECTL" create namespace jobset-addons-system --dry-run=client -o yaml | "$KUBECTL" apply -f - >/dev/null
	"$KUBECTL" apply --server-side --dry-run=server --field-manager=release-check -f "$tmp/render.yaml" >"$tmp/dry.log" 2>&1 ||
		{ cat "$tmp/dry.log"; die "the API server refuses the render from the registry"; }
	ok "dry-run   $(grep -c 'serverside-applied (server dry run)' "$tmp/dry.log") objects of the render pass kubectl apply --server-side --dry-run=server"
else
	echo "not run  dry-run: no KUBECONFIG, no cluster to take the render (make testbed-up, then KUBECONFIG=... make release-check)"
fi

if $kind; then
	KIND_REGISTRY=$REGHOST KIND_CHART=oci://$REG/jobset-addons KIND_CHART_VERSION=$CHART_VERSION \
		make --no-print-directory e2e-kind-release >"$tmp/kind.log" 2>&1 || { cat "$tmp/kind.log"; die "make e2e-kind-release: the release from $REG on kind"; }
	{ grep -E '^kindbed: |; the node pulled ' "$tmp/kind.log"; sed -n '/^=== summary/,$p' "$tmp/kind.log" | grep -v '^=== '; } | sed 's/^ */          /'
	ok "kind      a kind cluster pulled the release from $REG and ran a JobSet per add-on ($(($(date +%s) - start))s)"
else
	echo "not run  kind: no Docker engine answers (or RELEASE_CHECK_KIND=0); make e2e-kind's cluster would install the release from the registry"
fi

git clone -q "$ROOT" "$tmp/clone"
(cd "$tmp/clone" && hack/release.sh --preflight "$VERSION") || die "make release refuses $VERSION in a clean clone"
out=$(cd "$tmp/clone" && hack/release.sh --preflight v999.0.0 2>&1) && die "make release accepted v999.0.0, which has no CHANGELOG section"
grep -q 'CHANGELOG.md has no "## v999.0.0" section' <<<"$out" || die "v999.0.0 refused for another reason: $out"
echo "dirty" >>"$tmp/clone/README.md"
out=$(cd "$tmp/clone" && hack/release.sh --preflight "$VERSION" 2>&1) && die "make release accepted a dirty tree"
grep -q 'uncommitted changes' <<<"$out" || die "the dirty tree refused for another reason: $out"
(cd "$tmp/clone" && RELEASE_ALLOW_DIRTY=1 hack/release.sh --preflight "$VERSION") || die "RELEASE_ALLOW_DIRTY=1 did not let the dirty tree through"
ok "refusals  no CHANGELOG section, dirty tree (RELEASE_ALLOW_DIRTY=1 lets it through); $VERSION accepted"
echo "release-check: all passed in $(($(date +%s) - start))s"
