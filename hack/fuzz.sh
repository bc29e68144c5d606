#!/usr/bin/env bash
# fuzz.sh: run every fuzz target of our modules (contract parsers, every webhook's decode path)
# for FUZZTIME each, one after another. CI runs only their seed corpora, through make unit.
#
#   FUZZTIME=5m [FUZZ_PARALLEL=N] [FUZZMINIMIZETIME=5s] hack/fuzz.sh
#
# FUZZ_PARALLEL: fuzzing workers (default GOMAXPROCS). FUZZMINIMIZETIME: how long each new
# interesting input is minimized; go test's 60 s default starves the webhook targets, whose
# inputs are whole JobSets (podgroups' ran 8 inputs in 5 minutes with it).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
FUZZTIME=${FUZZTIME:-5m}
n=0
for dir in $(grep -rl --include='*_test.go' '^func Fuzz' pkg controllers | xargs -n1 dirname | sort -u); do
	for f in $(grep -ho '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go | sed 's/^func //' | sort); do
		echo "== $dir $f ($FUZZTIME)"
		(cd "$dir" && GOWORK=off go test -run '^$' -fuzz "^$f\$" -fuzztime "$FUZZTIME" -fuzzminimizetime "${FUZZMINIMIZETIME:-5s}" ${FUZZ_PARALLEL:+-parallel "$FUZZ_PARALLEL"} .)
		n=$((n + 1))
	done
done
echo "fuzz: $n targets, $FUZZTIME each, no failure"
