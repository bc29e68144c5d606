#!/usr/bin/env bash
# shared-deps-check.sh MODULE=PACKAGE...: each MODULE is a tool's wrapper module that pins the
# same versions as our modules for what it shares with them (k8s.io/api, apimachinery,
# client-go, controller-runtime and everything below them), so that building the tool after
# ours finds those packages compiled in the Go build cache instead of compiling them again.
# Fails, naming the module and version, where one of them drifted: a package is compiled once
# per distinct set of sources below it.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
shared=(k8s.io/apimachinery/pkg/runtime k8s.io/api/core/v1 k8s.io/client-go/kubernetes
	k8s.io/client-go/tools/cache sigs.k8s.io/controller-runtime/pkg/client)
# The modules, with their versions, of the packages below pkgs, as module dir resolves them.
below() { (cd "$1" && shift && GOWORK=off go list -deps -f '{{with .Module}}{{.Path}} {{.Version}}{{end}}' "$@" | sort -u); }
bad=0
for spec in "$@"; do
	mod=${spec%%=*} pkg=${spec#*=}
	deps=$(cd "$mod" && GOWORK=off go list -deps -test "$pkg")
	used=()
	for s in "${shared[@]}"; do grep -qx "$s" <<<"$deps" && used+=("$s"); done
	if ((${#used[@]} == 0)); then
		echo "$mod: $pkg uses none of ${shared[*]}"
		bad=1
		continue
	fi
	if ! diff=$(diff <(below e2e "${used[@]}") <(below "$mod" "${used[@]}")); then
		printf '%s: the packages below %s would be compiled again, for these versions (< ours, > %s):\n%s\n' \
			"$mod" "${used[*]}" "$mod" "$diff"
		bad=1
	fi
done
exit $bad
