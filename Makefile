# jobset-addons. `make help` lists what you can do, by what you want to do; e2e/README.md#knobs
# every variable that changes what a target does. The rules live in make/, one file a concern.
SHELL := /usr/bin/env bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := build

ROOT := $(abspath .)
BIN  := $(ROOT)/bin

# Every go command here builds as the tools (hack/build-tool.sh) and ko's images do: no cgo,
# -trimpath. One build cache entry then serves go vet, go test, make build and the images, and
# the standard library and the packages of a module version the tools share: a flag that
# differs compiles every package again.
export CGO_ENABLED := 0
export GOFLAGS := $(strip $(filter-out -trimpath,$(shell go env GOFLAGS)) -trimpath)
# How many tool builds make demo and make test run at once: one go build keeps both cores
# busy compiling, but leaves them idle while it downloads modules and links, which another fills.
TOOL_JOBS ?= 3

include make/versions.mk # the versions of every tool
include make/tools.mk    # how each tool is built into bin/, and bin/testbed
include make/demo.mk     # the demo and the testbed by hand
include make/test.mk     # make test, the e2e suites, unit, fuzz, the chart's checks
include make/build.mk    # our modules and binaries; the checks that need no cluster
include make/bench.mk    # the benchmarks
include make/kind.mk     # the kind cluster: its images, its suite, its benchmark
include make/release.mk  # releases

# A target is listed when its line ends in `## GROUP: what it does`.
HELP_GROUPS := try test bench release tools
help_title.try     := Try it
help_title.test    := Test
help_title.bench   := Benchmarks
help_title.release := Release
help_title.tools   := Maintainers' tools (each built once into bin/)

.PHONY: help
help:
	@echo 'make TARGET [VARIABLE=value ...]; the variables: e2e/README.md#knobs'
	@$(foreach g,$(HELP_GROUPS),echo; echo "$(help_title.$g)"; \
		grep -hE '^[a-zA-Z0-9_-]+:.*## $g: ' $(MAKEFILE_LIST) | sed -E 's/^([^:]+):.*## $g: /\1\t/' | \
		awk -F'\t' '{ printf "  %-15s %s\n", $$1, $$2 }';)
