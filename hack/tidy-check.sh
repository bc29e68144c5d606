#!/usr/bin/env bash
# tidy-check.sh MODULE...: fails when `go mod tidy` would change a module's go.mod or go.sum,
# and prints the change; it changes nothing. Four modules at once: tidy mostly waits on the
# module proxy, the first time. A module whose go line names a newer Go than the machine's (a
# wrapper module of a Kubernetes pre-release) is tidied with GOTOOLCHAIN=$GO_NEXT.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
GO_LOCAL=$(go env GOVERSION) GO_NEXT=${GO_NEXT:-} && export GO_LOCAL GO_NEXT
printf '%s\n' "$@" | xargs -P 4 -I{} bash -c '
	need=go$(sed -n "s/^go //p" "$1/go.mod")
	tc=$(go env GOTOOLCHAIN)
	if [[ $(printf "%s\n" "$need" "$GO_LOCAL" | sort -V | tail -1) != "$GO_LOCAL" ]]; then
		[[ -n $GO_NEXT ]] || { echo "$1 needs $need: set GO_NEXT"; exit 1; }
		tc=$GO_NEXT
	fi
	out=$(cd "$1" && GOTOOLCHAIN=$tc GOWORK=off go mod tidy -diff 2>&1) || { printf "%s\ngo mod tidy changes %s\n" "$out" "$1"; exit 1; }' _ {} ||
	exit 1
