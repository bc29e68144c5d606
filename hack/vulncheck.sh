#!/usr/bin/env bash
# vulncheck.sh GOVULNCHECK MODULE...: govulncheck every module against a Go vulnerability
# database and fail on a vulnerability our code reaches. The database is $GOVULNDB when set,
# else ../shared/vulndb beside the checkout when that folder exists (an offline copy, see its
# README), else https://vuln.go.dev. It prints which database it used and its date, and, per
# module, what govulncheck found in required but unreached code (informational: not a failure).
# A reached entry that hack/vulncheck-accepted.txt accepts for the module, with why, is named and
# does not fail it; any other does.
# When a remote database cannot be reached it says NOT RUN in one line: that is not a pass.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
bin=$1; shift
db=$(hack/vulndb.sh) || exit 1
echo "vulncheck: database $db, $(hack/vulndb.sh --date)"
out=$(mktemp); trap 'rm -f "$out"' EXIT
for m in "$@"; do
	GOWORK=off "$bin" -db "$db" -C "$m" ./... >"$out" 2>&1
	rc=$?
	if ((rc == 0)); then
		also=$(tr -s ' \n' ' ' <"$out" | grep -oE 'also found [^.]*' | sed 's/, but.*//' || true)
		echo "vulncheck: $m: no known vulnerability reached${also:+ (it $also, not called: see govulncheck -show verbose)}"
		continue
	fi
	if ((rc != 3)) && [[ $db != file://* ]] && grep -qiE 'vulnerabilit(y|ies) database|fetching vulnerabilities|no such host|dial tcp|connection refused|i/o timeout' "$out"; then
		echo "vulncheck: NOT RUN: the vulnerability database $db cannot be reached from this machine ($(grep -oiE "no such host|connection refused|i/o timeout" "$out" | head -1 || true)); set GOVULNDB to a reachable mirror"
		exit 0
	fi
	if ((rc == 3)); then
		# Reached: a pass only when every entry reached is accepted for this module
		# (hack/vulncheck-accepted.txt, with why).
		reached=$(sed -n '/=== Symbol Results ===/,/=== Package Results ===/p' "$out" | grep -oE '^Vulnerability #[0-9]+: GO-[0-9]+-[0-9]+' | awk '{print $3}' | sort -u)
		unaccepted=$(for id in $reached; do grep -qE "^$m $id " hack/vulncheck-accepted.txt || echo "$id"; done)
		if [[ -n $reached && -z $unaccepted ]]; then
			echo "vulncheck: $m: reaches only accepted entries: $(echo $reached) (why: hack/vulncheck-accepted.txt)"
			continue
		fi
	fi
	cat "$out"; echo "vulncheck: $m failed (govulncheck exit $rc)"; exit 1
done
