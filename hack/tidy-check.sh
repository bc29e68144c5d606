#!/usr/bin/env bash
# tidy-check.sh MODULE...: fails when `go mod tidy` would change a module's go.mod or go.sum,
# and prints the change; it changes nothing. Four modules at once: tidy mostly waits on the
# module proxy, the first time.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
printf '%s\n' "$@" | xargs -P 4 -I{} bash -c \
	'out=$(cd "$1" && GOWORK=off go mod tidy -diff 2>&1) || { printf "%s\ngo mod tidy changes %s\n" "$out" "$1"; exit 1; }' _ {} ||
	exit 1
