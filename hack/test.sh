#!/usr/bin/env bash
# make test and make test-all (make/test.mk).
#
# make test (no argument): the tier a contributor runs before every push, as JobSet's and
# Kueue's make test are: verify, unit and integration (envtest), and the core cases of the testbed
# e2e suites of the four add-ons and of the testbed itself (make e2e-quick: QUICK_TESTS of
# QUICK_SUITES), on one testbed started for the run and always stopped after. The tools are
# built while verify runs: verify waits on the module proxy, the builds on the CPU.
#
# make test-all (argument "all"): everything CI runs (.ci/run): the above, then on the same
# testbed the rest of those suites and the other e2e suites (reduced), upstream JobSet's e2e and
# the chart's checks; then
# bench-smoke, the gate-off cases and multicluster on testbeds of their own, and the kind suite
# where a Docker engine answers (it says SKIPPED where none does).
set -euo pipefail
cd "$(dirname "$0")/.."
tier=${1:-quick}
case $tier in quick | all) ;; *) echo "usage: $0 [quick|all]" >&2; exit 2 ;; esac
start=$(date +%s)
step() { echo; echo "==> $* ($(( $(date +%s) - start ))s)"; }

# No tracked file may change while make test runs (go.work.sum included): what differs from
# HEAD now must differ the same way at the end.
tracked() { git diff HEAD --no-ext-diff 2>/dev/null | sha256sum; }
before=$(tracked)

tools=(testbed-bins)
[[ $tier == all ]] && tools=(tools)
step "make build ${tools[*]} (in the background), make verify"
log=$(mktemp)
(make --no-print-directory build && make --no-print-directory -j"${TOOL_JOBS:-3}" "${tools[@]}") >"$log" 2>&1 &
builds=$!
if ! make --no-print-directory verify; then
	kill "$builds" 2>/dev/null || true
	exit 1
fi
step "waiting for the builds"
if ! wait "$builds"; then
	tail -n 60 "$log"
	echo "the builds failed (above: the end of their output)"
	exit 1
fi
rm -f "$log"
step "make unit"
make --no-print-directory unit

step "make testbed-up"
trap 'step "make testbed-down"; make --no-print-directory testbed-down' EXIT
make --no-print-directory testbed-up
export KUBECONFIG=$PWD/.testbed/kubeconfig

step "make e2e-quick"
make --no-print-directory e2e-quick
if [[ $tier == all ]]; then
	step "make e2e (the rest of the suites)"
	make --no-print-directory e2e E2E_EXCLUDE_QUICK=1
	step "make e2e SUITE=upstream"
	make --no-print-directory e2e SUITE=upstream
	step "make chart-verify"
	make --no-print-directory chart-verify
fi
step "make testbed-down"
trap - EXIT
make --no-print-directory testbed-down
unset KUBECONFIG

if [[ $tier == all ]]; then
	# On a testbed of its own, which holds nothing of the e2e suites: on theirs, its parts ran 30
	# to 60 % longer than alone (the same work; 5m30s against 4m5s); on its own, 3m53s to 4m39s
	# (scale.md).
	step "make bench-smoke (a testbed of its own)"
	make --no-print-directory bench-smoke

	step "make e2e SUITE=gate-off"
	make --no-print-directory e2e SUITE=gate-off
	step "make e2e SUITE=multicluster (reduced)"
	make --no-print-directory e2e SUITE=multicluster MULTICLUSTER_REDUCED=1

	step "make e2e-kind (reduced)"
	make --no-print-directory e2e-kind KIND_REDUCED=1
fi

if [[ $(tracked) != "$before" ]]; then
	echo "make test changed tracked files (none may change when the README's commands run):"
	git status --short --untracked-files=no
	exit 1
fi
step "make test$([[ $tier == all ]] && echo -all): all green in $(( $(date +%s) - start ))s"
