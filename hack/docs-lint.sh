#!/usr/bin/env bash
# Keeps the user docs for users (make docs-lint, part of make verify):
# - README.md is at most 130 lines;
# - README.md and docs/ outside docs/performance/ (the records place) cite no commit hash and no
#   "issue N" (an issue a reader cannot look up; upstream's "JobSet issue #971" is fine);
# - every relative link of the Markdown pages below points at a file that exists and, into a
#   Markdown page, at a heading that exists;
# - docs/README.md lists every page of docs/;
# - every make command shown (in a code span or block of the pages, or in a comment of the Go
#   code and scripts) names targets that exist, suites of make e2e SUITE= and benchmarks of
#   make bench ADDON= that exist.
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

# make commands: targets of the Makefile and make/*.mk, SUITE= and ADDON= values of make/*.mk.
targets=$(grep -hoE '^[a-zA-Z0-9_-]+:' Makefile make/*.mk | tr -d : | sort -u | tr '\n' ' ')
suites="$(cd e2e/suites && echo */ | tr -d /) $(sed -n 's/^E2E_SUITES := .*) //p' make/test.mk)"
addons=$(sed -n 's/^bench_knob\.\([a-z-]*\) .*/\1/p' make/bench.mk | tr '\n' ' ')
code=()
while IFS= read -r f; do code+=("$f"); done < <(git ls-files '*.go' '*.sh' '.ci/*' | grep -v '^tools/')
while IFS= read -r hit; do problem "$hit"; done < <(
	TARGETS=$targets SUITES=$suites ADDONS=$addons perl -e '
		my %t = map { $_ => 1 } split " ", $ENV{TARGETS};
		my %s = map { $_ => 1 } split " ", $ENV{SUITES};
		my %a = map { $_ => 1 } split " ", $ENV{ADDONS};
		sub check {
			my ($where, $cmd, $strict) = @_;
			my @w = split " ", $cmd;
			while (@w) {
				my $w = shift @w;
				last if $w =~ /\.\.\./; # make ... or ADDON=...: a placeholder
				$w =~ s/[).,;:\x27"`]+$//; # the sentence around it
				last if $w eq "" || $w =~ /[^A-Za-z0-9_.,=\/<>:-]/;
				if ($w eq "-C") { shift @w; next }
				next if $w =~ /^-/;
				if ($w =~ /^SUITE=(.*)/) { for (split /,/, $1) { print "$where: make ... SUITE=$_: no such suite\n" unless $s{$_} } next }
				if ($w =~ /^ADDON=(.*)/) { print "$where: make ... ADDON=$1: no such benchmark\n" unless $a{$1} || $1 eq "<add-on>"; next }
				next if $w =~ /=/;
				# In prose (comments), only a hyphenated word is taken for a target.
				last unless $strict || $w =~ /^[a-z0-9]+-[a-z0-9-]+$/;
				print "$where: make $w: no such target\n" unless $t{$w};
				last unless $strict;
			}
		}
		sub line { my ($text, $pos) = @_; 1 + (substr($text, 0, $pos) =~ tr/\n//) }
		for my $f (@ARGV) {
			open my $fh, "<", $f or die "$f: $!";
			my $text = do { local $/; <$fh> };
			my @spans; # [line, text]
			if ($f =~ /\.md$/) {
				# Fenced blocks line by line; then code spans (which may wrap) outside them.
				while ($text =~ /^```[^\n]*\n(.*?)^```/msg) {
					my ($n, $i) = (line($text, $-[1]), 0);
					push @spans, [$n + $i++, $_] for split /\n/, $1;
				}
				(my $t = $text) =~ s/^```.*?^```/$& =~ s![^\n]!!gr/msge;
				while ($t =~ /`([^`]+)`/g) { push @spans, [line($t, $-[0]), $1 =~ s/\s+/ /gr] }
			} else {
				while ($text =~ /\bmake( [^\n]*)/g) { push @spans, [line($text, $-[0]), "make$1"] }
			}
			for my $sp (@spans) {
				my ($n, $span) = @$sp;
				my $md = $f =~ /\.md$/ ? 1 : 0;
				while ($span =~ /(?:^|[\s;(&|])make\s+(.*)/g) { my $cmd = $1; check("$f:$n", $cmd, $md) }
			}
		}
	' "${pages[@]}" "${code[@]}"
)

((fail == 0)) || exit 1
echo "docs-lint: ok (README.md $lines lines, ${#pages[@]} pages' links)"
