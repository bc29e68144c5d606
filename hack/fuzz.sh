#!/usr/bin/env bash
# fuzz.sh: run every fuzz target of our modules (contract parsers, every webhook's decode path)
# for FUZZTIME each, one after another. CI runs only their seed corpora, through make unit.
#
#   FUZZTIME=5m [FUZZ_PARALLEL=N] hack/fuzz.sh    (FUZZ_PARALLEL: fuzzing workers, default GOMAXPROCS)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
FUZZTIME=${FUZZTIME:-5m}
n=0
for dir in $(grep -rl --include='*_test.go' '^func Fuzz' pkg controllers | xargs -n1 dirname | sort -u); do
	for f in $(grep -ho '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go | sed 's/^func //' | sort); do
		echo "== $dir $f ($FUZZTIME)"
		(cd "$dir" && GOWORK=off go test -run '^$' -fuzz "^$f\$" -fuzztime "$FUZZTIME" ${FUZZ_PARALLEL:+-parallel "$FUZZ_PARALLEL"} .)
		n=$((n + 1))
	done
done
echo "fuzz: $n targets, $FUZZTIME each, no failure"
