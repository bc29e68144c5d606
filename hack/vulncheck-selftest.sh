#!/usr/bin/env bash
# vulncheck-selftest.sh GOVULNCHECK: proves that make vulncheck can fail. It writes a database
# of one made-up entry, GO-9999-0001, on sigs.k8s.io/yaml's YAMLToJSONStrict (which
# pkg/contract's parsers call), and checks that govulncheck, run as vulncheck.sh runs it, exits
# 3 naming that entry. It needs no network.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bin=$1
db=$(mktemp -d); trap 'rm -rf "$db"' EXIT
mkdir -p "$db/index" "$db/ID"
now=2026-01-01T00:00:00Z
echo "{\"modified\": \"$now\"}" >"$db/index/db.json"
echo "[{\"path\": \"sigs.k8s.io/yaml\", \"vulns\": [{\"id\": \"GO-9999-0001\", \"modified\": \"$now\"}]}]" >"$db/index/modules.json"
cat >"$db/ID/GO-9999-0001.json" <<JSON
{
  "schema_version": "1.3.1",
  "id": "GO-9999-0001",
  "modified": "$now",
  "published": "$now",
  "summary": "Made up by hack/vulncheck-selftest.sh: make vulncheck must fail on it",
  "details": "A fake vulnerability in a function our code reaches.",
  "affected": [{
    "package": {"name": "sigs.k8s.io/yaml", "ecosystem": "Go"},
    "ranges": [{"type": "SEMVER", "events": [{"introduced": "0"}]}],
    "ecosystem_specific": {"imports": [{"path": "sigs.k8s.io/yaml", "symbols": ["YAMLToJSONStrict"]}]}
  }],
  "database_specific": {"url": "https://pkg.go.dev/vuln/GO-9999-0001"}
}
JSON
set +e
out=$(GOWORK=off "$bin" -db "file://$db" -C pkg/contract ./... 2>&1)
rc=$?
set -e
if ((rc != 3)) || ! grep -q GO-9999-0001 <<<"$out"; then
	echo "$out"
	echo "vulncheck-selftest: FAILED: govulncheck exited $rc on a reached fake vulnerability (want 3, naming GO-9999-0001)"
	exit 1
fi
echo "vulncheck-selftest: ok: a fake vulnerability on a reached function fails the check (govulncheck exit 3)"
