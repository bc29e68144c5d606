#!/usr/bin/env bash
# vulndb.sh: the Go vulnerability database make vulncheck uses: $GOVULNDB when set, else
# file://<abs>/../shared/vulndb when that offline copy exists beside the checkout, else
# https://vuln.go.dev. vulndb.sh --date: the date of that database, as its README gives it for
# the offline copy ("as of YYYY-MM-DD"), "live" for the public one.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
if [[ -n ${GOVULNDB:-} ]]; then
	db=$GOVULNDB
elif [[ -f $root/../shared/vulndb/index/db.json ]]; then
	db=file://$(cd "$root/../shared/vulndb" && pwd)
else
	db=https://vuln.go.dev
fi
if [[ ${1:-} != --date ]]; then echo "$db"; exit 0; fi
case $db in
file://*)
	readme=${db#file://}/README.md
	date=$(grep -oE 'as of [0-9]{4}-[0-9]{2}-[0-9]{2}' "$readme" 2>/dev/null | head -1 | cut -d' ' -f3 || true)
	echo "dated ${date:-unknown (no README with \"as of YYYY-MM-DD\")}" ;;
*) echo "live (fetched at $(date -u +%Y-%m-%dT%H:%MZ))" ;;
esac
