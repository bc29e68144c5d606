#!/usr/bin/env bash
# Passes `go test -v` output through and ends it with a summary: every test that passed or
# failed, with its time. Exits non-zero when a test or package failed.
set -uo pipefail
log=$(mktemp)
trap 'rm -f "$log"' EXIT
tee "$log"
echo
echo "=== summary"
grep -E '^--- (PASS|FAIL|SKIP)' "$log"
pass=$(grep -cE '^\s*--- PASS' "$log"); fail=$(grep -cE '^\s*--- FAIL' "$log"); skip=$(grep -cE '^\s*--- SKIP' "$log")
grep -E '^(ok|FAIL|---)\s' "$log" | grep -vE '^---' || true
echo "passed $pass, failed $fail, skipped $skip"
if [ "$fail" -ne 0 ] || grep -qE '^(FAIL|panic:)' "$log"; then exit 1; fi
