#!/usr/bin/env bash
# release.sh: make release. Writes dist/ for VERSION, with no Docker engine and no registry:
#
#   KO=... HELM=... RELEASE_TOOL=... GOVULNCHECK=... RELEASE_MODULES="..." hack/release.sh VERSION
#   hack/release.sh --preflight VERSION      only the refusals below
#
#   dist/images/                     one OCI image layout: per add-on a linux/amd64 + linux/arm64
#                                    index tagged <name>:VERSION, built by ko, and ko's SPDX SBOMs
#                                    of the index and of each platform tagged <name>:sha256-<hex>.sbom
#   dist/images.digests              every manifest of dist/images, "<name>:<tag> <digest>" a line
#   dist/jobset-addons-X.Y.Z.tgz     the chart (helm package, then helm lint --strict): version X.Y.Z,
#                                    appVersion VERSION, each image $REGISTRY/<name>:VERSION@<digest>
#   dist/kubectl-jobset_addons-VERSION-<os>-<arch>.tar.gz   the kubectl plugin, linux and darwin,
#                                    amd64 and arm64
#   dist/jobset-addons.krew.yaml     krew's Plugin manifest of those archives
#   dist/RELEASE-NOTES.md            CHANGELOG.md's section for VERSION and the vulnerability check
#   dist/SHA256SUMS                  every file above (sha256sum -c SHA256SUMS)
#
# Before it writes anything it refuses a VERSION that is not vX.Y.Z[-pre], one without a
# "## VERSION" section in CHANGELOG.md, and a tree with uncommitted changes (RELEASE_ALLOW_DIRTY=1
# lets a dirty tree through, for trying the release out; never for a real one), and a module
# whose govulncheck finds a vulnerability our code reaches (RELEASE_SKIP_VULNCHECK=1 skips it,
# and the notes then say so).
#
# Reproducible: everything is built twice, the second time from a copy of the tree at another
# path, with SOURCE_DATE_EPOCH (and KO_DATA_DATE_EPOCH) the commit's time, -trimpath, no build
# id and no VCS stamp; the release fails unless both builds give the same digests and sums.
# REGISTRY (default ghcr.io/jobset-addons) is where the chart says the images are;
# make release-push REGISTRY=... re-points a copy at another registry.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$PWD
preflight=false
if [[ ${1:-} == --preflight ]]; then preflight=true; shift; fi
VERSION=${1:-}
REGISTRY=${REGISTRY:-ghcr.io/jobset-addons}
DIST=$ROOT/dist
WORK=$ROOT/bin/release-work
CONTROLLERS=(volumeclaims resourceclaims sequencer podgroups)
start=$(date +%s)
log() { echo "release: $*" >&2; }
die() { echo "release: refused: $*" >&2; exit 1; }

# 1. What the release checks before it writes anything.
[[ $VERSION =~ ^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$ ]] ||
	die "VERSION=${VERSION:-(empty)} is not vMAJOR.MINOR.PATCH[-PRERELEASE] (make release VERSION=v0.2.0)"
notes=$(awk -v v="$VERSION" '$0 ~ "^## " { if (on) exit; on = ($2 == v) } on' CHANGELOG.md 2>/dev/null || true)
[[ -n $notes ]] || die "CHANGELOG.md has no \"## $VERSION\" section: write what $VERSION brings first"
dirty=$(git status --porcelain --untracked-files=normal)
if [[ -n $dirty ]]; then
	[[ ${RELEASE_ALLOW_DIRTY:-} == 1 ]] || die "the tree has uncommitted changes (commit them, or RELEASE_ALLOW_DIRTY=1 to try a release out):
$dirty"
	$preflight || log "WARNING: building from a dirty tree (RELEASE_ALLOW_DIRTY=1): not a release to publish"
fi
# --preflight: only the checks above (make release runs them before it builds any tool).
$preflight && exit 0
# The vulnerability check (make vulncheck's, every module): its database and date go into the
# release notes.
if [[ ${RELEASE_SKIP_VULNCHECK:-} == 1 ]]; then
	vulns="Not run for this build (RELEASE_SKIP_VULNCHECK=1): not a release to publish."
else
	read -r -a modules <<<"$RELEASE_MODULES"
	log "make vulncheck on ${#modules[@]} modules"
	out=$(hack/vulncheck.sh "$GOVULNCHECK" "${modules[@]}") || { echo "$out" >&2; die "make vulncheck fails"; }
	grep -q 'NOT RUN' <<<"$out" && { echo "$out" >&2; die "the vulnerability check could not run (set GOVULNDB)"; }
	vulns=$(printf 'make vulncheck, before the build:\n\n```\n%s\n```' "$out")
fi
EPOCH=$(git log -1 --format=%ct)
export SOURCE_DATE_EPOCH=$EPOCH KO_DATA_DATE_EPOCH=$EPOCH VERSION

# build_all SRC OUT: images, chart and plugin archives of the tree SRC into OUT, and OUT/sums,
# the list a second build must reproduce.
build_all() {
	local src=$1 out=$2 c specs=() base os arch
	rm -rf "$out" && mkdir -p "$out/ko" "$out/files"
	base=$("$RELEASE_TOOL" base "$out/kocache")
	for c in "${CONTROLLERS[@]}"; do
		(cd "$src/controllers/$c" && GOWORK=off KOCACHE=$out/kocache KO_CONFIG_PATH=$ROOT/hack/release/ko.yaml \
			KO_DEFAULTBASEIMAGE=$base KO_DOCKER_REPO=$REGISTRY/$c \
			"$KO" build --bare --push=false --sbom=spdx --sbom-dir "$out/ko/$c-sbom" --oci-layout-path "$out/ko/$c" . \
			>"$out/ko/$c.log" 2>&1) || { cat "$out/ko/$c.log" >&2; return 1; }
		specs+=("$c=$out/ko/$c,$out/ko/$c-sbom")
	done
	# The sequencer's start barrier: its init container's image, from the sequencer's module.
	(cd "$src/controllers/sequencer" && GOWORK=off KOCACHE=$out/kocache KO_CONFIG_PATH=$ROOT/hack/release/ko.yaml \
		KO_DEFAULTBASEIMAGE=$base KO_DOCKER_REPO=$REGISTRY/barrier \
		"$KO" build --bare --push=false --sbom=spdx --sbom-dir "$out/ko/barrier-sbom" --oci-layout-path "$out/ko/barrier" ./barrier \
		>"$out/ko/barrier.log" 2>&1) || { cat "$out/ko/barrier.log" >&2; return 1; }
	specs+=("barrier=$out/ko/barrier,$out/ko/barrier-sbom")
	"$RELEASE_TOOL" images "$out/files/images" "$VERSION" "${specs[@]}" >"$out/files/images.digests"

	# The chart: a copy with every file dated at the commit (helm package keeps file times), the
	# images pinned.
	mkdir -p "$out/chart"
	cp -r "$src/charts/jobset-addons" "$out/chart/"
	"$RELEASE_TOOL" pin-values "$out/chart/jobset-addons/values.yaml" "$REGISTRY" "$VERSION" "$out/files/images.digests"
	find "$out/chart" -exec touch -h -d "@$EPOCH" {} +
	"$HELM" package "$out/chart/jobset-addons" --version "${VERSION#v}" --app-version "$VERSION" -d "$out/files" >/dev/null
	"$HELM" lint --strict "$out/files/jobset-addons-${VERSION#v}.tgz" >"$out/lint.log" 2>&1 || { cat "$out/lint.log" >&2; return 1; }

	# The kubectl plugin.
	for p in linux/amd64 linux/arm64 darwin/amd64 darwin/arm64; do
		os=${p%/*} arch=${p#*/}
		mkdir -p "$out/plugin/$os-$arch"
		(cd "$src/cmd/kubectl-jobset-addons" && GOWORK=off CGO_ENABLED=0 GOOS=$os GOARCH=$arch go build -trimpath -buildvcs=false \
			-ldflags "-s -w -buildid= -X github.com/jobset-addons/jobset-addons/pkg/addon/version.version=$VERSION" \
			-o "$out/plugin/$os-$arch/kubectl-jobset_addons" .)
		tar --sort=name --mtime="@$EPOCH" --owner=0 --group=0 --numeric-owner --mode=go-w \
			-C "$out/plugin/$os-$arch" -cf - kubectl-jobset_addons | gzip -n -9 \
			>"$out/files/kubectl-jobset_addons-$VERSION-$os-$arch.tar.gz"
	done
	(cd "$out/files" && cat images.digests && sha256sum -- *.tgz *.tar.gz) >"$out/sums"
}

log "building $VERSION (commit $(git rev-parse --short HEAD), SOURCE_DATE_EPOCH=$EPOCH) into $WORK/a"
build_all "$ROOT" "$WORK/a"
log "first build done in $(($(date +%s) - start))s; building again from a copy of the tree at $WORK/src"
rm -rf "$WORK/src" && mkdir -p "$WORK/src"
git ls-files -z | tar --null -T - -cf - | tar -C "$WORK/src" -xf -
build_all "$WORK/src" "$WORK/b"
"$RELEASE_TOOL" compare "$WORK/a/sums" "$WORK/b/sums"
log "reproducible: both builds give the same $(wc -l <"$WORK/a/sums") digests and sums"

# The version is stamped: the plugin for this machine and each add-on's binary out of its image
# for this machine's architecture say VERSION with --version, and the add-on logs it first thing.
host=$WORK/a/plugin/$(go env GOOS)-$(go env GOARCH)/kubectl-jobset_addons
[[ $("$host" --version) == "kubectl-jobset_addons $VERSION" ]] || die "the plugin says $("$host" --version), not $VERSION"
for c in "${CONTROLLERS[@]}"; do
	"$RELEASE_TOOL" extract-app "$WORK/a/files/images" "$c" "$VERSION" "linux/$(go env GOARCH)" "$WORK/a/$c"
	[[ $("$WORK/a/$c" --version) == "$c $VERSION" ]] || die "$c in its image says $("$WORK/a/$c" --version), not $VERSION"
	started=$("$WORK/a/$c" --kubeconfig=/nonexistent 2>&1 | head -n 1 || true)
	[[ $started == *'"msg":"Starting","version":"'$VERSION'"'* ]] || die "$c does not log its version first: $started"
done
log "stamped: the plugin and the four add-ons (linux/$(go env GOARCH), out of their images) say $VERSION; the add-ons log it at start"

# 2. dist/
rm -rf "$DIST"
mv "$WORK/a/files" "$DIST"
"$RELEASE_TOOL" krew "$VERSION" "$DIST" >"$DIST/jobset-addons.krew.yaml"
{
	echo "# jobset-addons $VERSION"
	echo
	tail -n +2 <<<"$notes"
	echo
	echo "## Artifacts"
	echo
	echo "Images (linux/amd64, linux/arm64; SPDX SBOM of each at <name>:sha256-<hex>.sbom):"
	echo
	while read -r ref digest; do
		[[ $ref == *:"$VERSION" ]] && echo "- \`$REGISTRY/$ref@$digest\`"
	done <"$DIST/images.digests"
	echo
	echo "Chart: \`oci://$REGISTRY/jobset-addons\`, version ${VERSION#v}. Built from commit $(git rev-parse HEAD)$([[ -n $dirty ]] && echo ' with uncommitted changes (not for publishing)')."
	echo
	echo "## Vulnerability check"
	echo
	echo "$vulns"
} >"$DIST/RELEASE-NOTES.md"
(cd "$DIST" && find . -type f | sed 's|^\./||' | LC_ALL=C sort | xargs sha256sum) >"$WORK/SHA256SUMS"
mv "$WORK/SHA256SUMS" "$DIST/SHA256SUMS"
log "dist/ written in $(($(date +%s) - start))s:"
(cd "$DIST" && du -bs -- * | LC_ALL=C sort -k2 | sed 's/^/  /') >&2
