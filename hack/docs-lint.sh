#!/usr/bin/env bash
# Keeps the user docs for users (make docs-lint, part of make verify):
# - README.md is at most 130 lines;
# - README.md and docs/ outside docs/performance/ (the records place) cite no commit hash and no
#   "issue N" (an issue a reader cannot look up; upstream's "JobSet issue #971" is fine);
# - every relative link of the Markdown pages below points at a file that exists and, into a
#   Markdown page, at a heading that exists;
# - docs/README.md lists every page of docs/.
# Run from anywhere; prints each problem as FILE:LINE: what, and exits 1 if there is one.
set -euo pipefail
cd "$(dirname "$0")/.."
export LC_ALL=C

readme_max=130
# Hex tokens that are not commit hashes: FILE:TOKEN.
allow_hex=(
	"docs/reference.md:5f1c2a9e" # the spec-hash annotation's example value, generated from pkg/contract
)
# The pages whose links are checked.
pages=(README.md CONTRIBUTING.md e2e/README.md pkg/contract/README.md charts/jobset-addons/README.md)
while IFS= read -r f; do pages+=("$f"); done < <(find docs -name '*.md' | sort)

fail=0
problem() { echo "$1"; fail=1; }

lines=$(wc -l < README.md)
((lines <= readme_max)) || problem "README.md: $lines lines, at most $readme_max (records go to docs/performance/)"

# User pages: no commit hashes, no "issue N".
user=(README.md)
for f in "${pages[@]}"; do [[ $f == docs/* && $f != docs/performance/* ]] && user+=("$f"); done
for f in "${user[@]}"; do
	# A hash: 7 to 40 hex digits with a digit, standing alone (not inside a longer word or
	# digest: sha256 sums are 64). Words of the letters a-f alone ("accede") are not hashes.
	while IFS=: read -r n tok; do
		allowed=0
		for a in "${allow_hex[@]}"; do [[ $a == "$f:$tok" ]] && allowed=1; done
		((allowed)) || problem "$f:$n: commit hash $tok (measurements and their commits go to docs/performance/)"
	done < <(grep -noE '(^|[^0-9A-Za-z_./:-])[0-9a-f]{7,40}([^0-9A-Za-z_-]|$)' "$f" |
		sed -E 's/^([0-9]+):[^0-9a-f]?([0-9a-f]+).*$/\1:\2/' |
		awk -F: '$2 ~ /[0-9]/' || true)
	while IFS= read -r hit; do
		problem "$f:${hit%%:*}: \"${hit#*:}\": a reader cannot look it up (history goes to docs/performance/)"
	done < <(grep -noE '\b[Ii]ssues? [0-9]+' "$f" || true)
done

# docs/README.md lists every page.
for f in "${pages[@]}"; do
	[[ $f == docs/* && $f != docs/README.md ]] || continue
	grep -qF "](${f#docs/})" docs/README.md || grep -qF "](${f#docs/}#" docs/README.md ||
		problem "docs/README.md: does not list $f"
done

# GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens; repeats -1, -2.
anchors() {
	awk '
		/^```/ { fence = !fence; next }
		fence { next }
		/^#+ / {
			h = $0; sub(/^#+ +/, "", h); h = tolower(h)
			gsub(/[^a-z0-9 _-]/, "", h); gsub(/ /, "-", h)
			if (h in seen) { seen[h]++; print h "-" seen[h] } else { seen[h] = 0; print h }
		}
		{ while (match($0, /(name|id)="[^"]+"/)) { a = substr($0, RSTART, RLENGTH); sub(/^[a-z]+="/, "", a); sub(/"$/, "", a); print a; $0 = substr($0, RSTART + RLENGTH) } }
	' "$1"
}

for f in "${pages[@]}"; do
	dir=$(dirname "$f")
	# Inline links ](target), outside code fences and code spans.
	while IFS=$'\t' read -r n target; do
		[[ $target =~ ^(https?:|mailto:) ]] && continue
		path=${target%%#*}
		anchor=
		[[ $target == *'#'* ]] && anchor=${target#*#}
		if [[ -z $path ]]; then
			dest=$f
		else
			dest=$dir/$path
		fi
		if [[ ! -e $dest ]]; then
			problem "$f:$n: link to $target: no such file"
			continue
		fi
		if [[ -n $anchor && $dest == *.md && -f $dest ]]; then
			anchors "$dest" | grep -qxF -- "$anchor" || problem "$f:$n: link to $target: no such heading in $dest"
		fi
	done < <(awk '
		/^```/ { fence = !fence; next }
		fence { next }
		{
			line = $0; gsub(/`[^`]*`/, "", line)
			while (match(line, /\]\([^) ]+\)/)) {
				t = substr(line, RSTART + 2, RLENGTH - 3)
				printf "%d\t%s\n", NR, t
				line = substr(line, RSTART + RLENGTH)
			}
		}
	' "$f")
done

((fail == 0)) || exit 1
echo "docs-lint: ok (README.md $lines lines, ${#pages[@]} pages' links)"
