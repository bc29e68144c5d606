#!/usr/bin/env bash
# vulncheck.sh GOVULNCHECK MODULE...: govulncheck every module against $GOVULNDB (default
# https://vuln.go.dev; a file:// mirror works too). Fails on a vulnerability our code reaches.
# When the database cannot be reached it says so in one line and checks nothing: that is
# not a pass, and the line says it.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
bin=$1; shift
db=${GOVULNDB:-https://vuln.go.dev}
out=$(mktemp); trap 'rm -f "$out"' EXIT
for m in "$@"; do
	GOWORK=off "$bin" -db "$db" -C "$m" ./... >"$out" 2>&1
	rc=$?
	if ((rc == 0)); then echo "vulncheck: $m: no known vulnerability reached ($db)"; continue; fi
	if ((rc != 3)) && grep -qiE 'vulnerabilit(y|ies) database|fetching vulnerabilities|no such host|dial tcp|connection refused|i/o timeout' "$out"; then
		echo "vulncheck: NOT RUN: the vulnerability database $db cannot be reached from this machine ($(grep -oiE "no such host|connection refused|i/o timeout" "$out" | head -1 || true)); set GOVULNDB to a reachable mirror"
		exit 0
	fi
	cat "$out"; echo "vulncheck: $m failed (govulncheck exit $rc)"; exit 1
done
