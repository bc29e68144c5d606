# jobset-addons. `make help` lists the targets.
SHELL := /usr/bin/env bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := build

ROOT := $(abspath .)
BIN  := $(ROOT)/bin

# Versions of everything the testbed and the checks build. A binary is cached under
# bin/<name>-<version>/ and rebuilt only when its version changes.
KUBE_VERSION   := v1.37.1
ETCD_VERSION   := v3.6.6
KWOK_VERSION   := v0.8.0
JOBSET_VERSION := v0.12.0
HELM_VERSION   := v4.3.0
VOLCANO_VERSION      := v1.10.0
SCHEDPLUGINS_VERSION := v0.33.5
VULN_VERSION         := v1.9.0
KIND_VERSION         := v0.33.0
KO_VERSION           := v0.18.0

KUBE_DIR   := $(BIN)/kube-$(KUBE_VERSION)
ETCD_DIR   := $(BIN)/etcd-$(ETCD_VERSION)
KWOK_DIR   := $(BIN)/kwok-$(KWOK_VERSION)
JOBSET_DIR := $(BIN)/jobset-$(JOBSET_VERSION)
HELM_DIR   := $(BIN)/helm-$(HELM_VERSION)
VOLCANO_DIR      := $(BIN)/volcano-$(VOLCANO_VERSION)
SCHEDPLUGINS_DIR := $(BIN)/scheduler-plugins-$(SCHEDPLUGINS_VERSION)
GOVULNCHECK      := $(BIN)/govulncheck-$(VULN_VERSION)/govulncheck
KIND             := $(BIN)/kind-$(KIND_VERSION)/kind
KO               := $(BIN)/ko-$(KO_VERSION)/ko

KUBE_MAJOR := $(word 1,$(subst ., ,$(patsubst v%,%,$(KUBE_VERSION))))
KUBE_MINOR := $(word 2,$(subst ., ,$(KUBE_VERSION)))
KUBE_LDFLAGS := $(foreach p,k8s.io/component-base/version k8s.io/client-go/pkg/version,\
	-X $(p).gitVersion=$(KUBE_VERSION) -X $(p).gitMajor=$(KUBE_MAJOR) -X $(p).gitMinor=$(KUBE_MINOR) \
	-X $(p).gitTreeState=clean -X $(p).buildDate=1970-01-01T00:00:00Z)

KUBE_BINS := kube-apiserver kube-controller-manager kube-scheduler kubectl
TESTBED_BINS := $(addprefix $(KUBE_DIR)/,$(KUBE_BINS)) $(ETCD_DIR)/etcd \
	$(KWOK_DIR)/kwok $(KWOK_DIR)/kwokctl $(JOBSET_DIR)/jobset $(HELM_DIR)/helm \
	$(VOLCANO_DIR)/vc-scheduler $(SCHEDPLUGINS_DIR)/sp-scheduler

$(KUBE_DIR)/%: tools/kube/go.mod
	hack/build-tool.sh tools/kube $@ k8s.io/kubernetes/cmd/$* "$(KUBE_LDFLAGS)"
$(ETCD_DIR)/etcd: tools/etcd/go.mod
	hack/build-tool.sh tools/etcd $@ go.etcd.io/etcd/server/v3 \
		"-X go.etcd.io/etcd/api/v3/version.GitSHA=$(ETCD_VERSION)"
$(KWOK_DIR)/%: tools/kwok/go.mod
	hack/build-tool.sh tools/kwok $@ sigs.k8s.io/kwok/cmd/$* \
		"-X sigs.k8s.io/kwok/pkg/consts.Version=$(patsubst v%,%,$(KWOK_VERSION))"
$(JOBSET_DIR)/jobset: tools/jobset/go.mod
	hack/build-tool.sh tools/jobset $@ sigs.k8s.io/jobset \
		"-X sigs.k8s.io/jobset/pkg/version.GitVersion=$(JOBSET_VERSION)"
$(HELM_DIR)/helm: tools/helm/go.mod
	hack/build-tool.sh tools/helm $@ helm.sh/helm/v4/cmd/helm
# The two gang schedulers podgroups drives, each run on the testbed as a second scheduler.
$(VOLCANO_DIR)/vc-scheduler: tools/volcano/go.mod
	hack/build-tool.sh tools/volcano $@ volcano.sh/volcano/cmd/scheduler
$(SCHEDPLUGINS_DIR)/sp-scheduler: tools/schedplugins/go.mod
	hack/build-tool.sh tools/schedplugins $@ sigs.k8s.io/scheduler-plugins/cmd/scheduler

$(GOVULNCHECK): tools/vuln/go.mod
	hack/build-tool.sh tools/vuln $@ golang.org/x/vuln/cmd/govulncheck
$(KIND): tools/kind/go.mod
	hack/build-tool.sh tools/kind $@ sigs.k8s.io/kind
$(KO): tools/ko/go.mod
	hack/build-tool.sh tools/ko $@ github.com/google/ko

# bin/testbed is the one directory the testbed, envtest (KUBEBUILDER_ASSETS) and kwokctl's
# PATH look in: links to the versioned binaries above, and JobSet's manifests.
TESTBED := $(BIN)/testbed
JOBSET_SRC = $(shell cd tools/jobset && GOWORK=off go list -m -f '{{.Dir}}' sigs.k8s.io/jobset)
VOLCANO_SRC = $(shell cd tools/volcano && GOWORK=off go list -m -f '{{.Dir}}' volcano.sh/volcano)
SCHEDPLUGINS_SRC = $(shell cd tools/schedplugins && GOWORK=off go list -m -f '{{.Dir}}' sigs.k8s.io/scheduler-plugins)
TESTBED_STAMP := $(TESTBED)/.stamp-$(KUBE_VERSION)-$(ETCD_VERSION)-$(KWOK_VERSION)-$(JOBSET_VERSION)-$(HELM_VERSION)-$(VOLCANO_VERSION)-$(SCHEDPLUGINS_VERSION)

$(TESTBED_STAMP): $(TESTBED_BINS)
	rm -rf $(TESTBED) && mkdir -p $(TESTBED)
	for f in $(TESTBED_BINS); do ln -s $$f $(TESTBED)/; done
	cp $(JOBSET_SRC)/config/components/crd/bases/jobset.x-k8s.io_jobsets.yaml $(TESTBED)/jobset-crd.yaml
	cp $(JOBSET_SRC)/config/components/webhook/manifests.yaml $(TESTBED)/jobset-webhooks.yaml
	mkdir -p $(TESTBED)/volcano-crds $(TESTBED)/scheduler-plugins-crds
	cp $(VOLCANO_SRC)/config/crd/volcano/bases/*.yaml $(TESTBED)/volcano-crds/
	cp $(SCHEDPLUGINS_SRC)/config/crd/bases/*.yaml $(TESTBED)/scheduler-plugins-crds/
	chmod u+w $(TESTBED)/volcano-crds/*.yaml $(TESTBED)/scheduler-plugins-crds/*.yaml
	chmod u+w $(TESTBED)/*.yaml
	touch $@

.PHONY: testbed-bins
testbed-bins: $(TESTBED_STAMP) ## Build (once) every binary the testbed runs

CONTROLLERS := volumeclaims resourceclaims sequencer podgroups
# Our modules (go.work) and the wrapper modules that pin the testbed's tools (not in go.work:
# they pin other Kubernetes versions).
MODULES := pkg/contract pkg/addon $(addprefix controllers/,$(CONTROLLERS)) cmd/kubectl-jobset-addons e2e
TOOL_MODULES := tools/kube tools/etcd tools/kwok tools/jobset tools/helm tools/volcano tools/schedplugins tools/vuln tools/kind tools/ko charts/jobset-addons/tests

GO_TEST_FLAGS ?= -count=1
export KUBEBUILDER_ASSETS := $(BIN)/testbed

.PHONY: help
help: ## List the targets
	@grep -hE '^[a-zA-Z0-9_-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-16s %s\n", $$1, $$2}'

.PHONY: build
CONTROLLER_BINS := $(addprefix $(BIN)/,$(CONTROLLERS))
build: $(CONTROLLER_BINS) $(BIN)/kubectl-jobset_addons ## Build every controller binary and the kubectl plugin into bin/

$(CONTROLLER_BINS): $(BIN)/%: FORCE
	cd controllers/$* && go build -trimpath -o $@ .

# The kubectl plugin: `kubectl jobset-addons status JOBSET` once bin/ is on PATH.
$(BIN)/kubectl-jobset_addons: FORCE
	cd cmd/kubectl-jobset-addons && go build -trimpath -o $@ .

.PHONY: FORCE
FORCE:

.PHONY: docs
docs: ## Write docs/reference.md (the annotation reference) from pkg/contract
	cd pkg/contract && GOWORK=off go run ./internal/docgen $(ROOT)/docs/reference.md

.PHONY: verify
verify: ## gofmt, go vet, go mod tidy unchanged, every module builds with GOWORK=off, docs up to date, govulncheck
	@bad=$$(gofmt -l $(MODULES) tools hack 2>/dev/null); if [ -n "$$bad" ]; then echo "gofmt would change:"; echo "$$bad"; exit 1; fi
	@for m in $(MODULES) $(TOOL_MODULES); do \
		cp $$m/go.mod $$m/go.mod.orig; cp $$m/go.sum $$m/go.sum.orig; \
		(cd $$m && GOWORK=off go mod tidy) || exit 1; \
		if ! cmp -s $$m/go.mod $$m/go.mod.orig || ! cmp -s $$m/go.sum $$m/go.sum.orig; then \
			diff -u $$m/go.mod.orig $$m/go.mod; mv $$m/go.mod.orig $$m/go.mod; mv $$m/go.sum.orig $$m/go.sum; \
			echo "go mod tidy changes $$m"; exit 1; fi; \
		rm $$m/go.mod.orig $$m/go.sum.orig; \
	done
	@for m in $(MODULES); do echo "== $$m (GOWORK=off)"; (cd $$m && GOWORK=off go vet ./... && GOWORK=off go build -o /dev/null ./...) || exit 1; done
	@cd pkg/contract && GOWORK=off go run ./internal/docgen -check $(ROOT)/docs/reference.md
	@$(MAKE) --no-print-directory vulncheck
	@echo "verify: ok"

.PHONY: vulncheck
vulncheck: $(GOVULNCHECK) ## govulncheck every module against $$GOVULNDB (default vuln.go.dev); says NOT RUN when it cannot reach it
	@hack/vulncheck.sh $(GOVULNCHECK) $(MODULES)

.PHONY: unit
unit: testbed-bins ## Unit and integration tests of every module (integration runs envtest on bin/testbed)
	@for m in $(filter-out e2e,$(MODULES)) charts/jobset-addons/tests; do (cd $$m && GOWORK=off go test $(GO_TEST_FLAGS) ./...) || exit 1; done

.PHONY: e2e
e2e: testbed-bins build ## e2e suites, one after another, on the testbed (started for the run unless KUBECONFIG is set)
	cd e2e && GOWORK=off go test $(GO_TEST_FLAGS) -p 1 -timeout 30m -v ./suites/... 2>&1 | $(ROOT)/hack/test-summary.sh

.PHONY: test
test: ## Everything CI runs: verify, unit and integration, e2e on a fresh testbed, chart checks
	hack/test.sh

.PHONY: e2e-kind
e2e-kind: testbed-bins $(TESTBEDCTL) ## The e2e suites on a kind cluster with the chart installed from images ko builds; needs Docker, else says SKIPPED
	@if ! docker info >/dev/null 2>&1; then hack/e2e-kind.sh; else \
		$(MAKE) --no-print-directory $(KIND) $(KO) && hack/e2e-kind.sh $(KIND) $(KO) $(HELM_DIR)/helm $(KUBE_DIR)/kubectl $(TESTBEDCTL); fi

.PHONY: chaos
chaos: build testbed-bins $(TESTBEDCTL) ## Full chaos (200 JobSets, 20 SIGKILLs per add-on), leader failover and a 60 s webhook outage; make e2e runs them reduced
	hack/with-testbed.sh bash -c 'cd e2e && CHAOS_JOBSETS=$(CHAOS_JOBSETS) CHAOS_KILLS=$(CHAOS_KILLS) CHAOS_OUTAGE_SECONDS=$(CHAOS_OUTAGE_SECONDS) \
		GOWORK=off go test -count=1 -v -timeout 60m ./suites/chaos/ 2>&1 | $(ROOT)/hack/test-summary.sh'
CHAOS_JOBSETS ?= 200
CHAOS_KILLS ?= 20
CHAOS_OUTAGE_SECONDS ?= 60

.PHONY: fuzz
fuzz: ## Run every fuzz target (contract parsers, every webhook's decode path) for $(FUZZTIME) each; make unit runs their seeds
	FUZZTIME=$(FUZZTIME) hack/fuzz.sh
FUZZTIME ?= 5m

TESTBEDCTL := $(BIN)/testbedctl
$(TESTBEDCTL): FORCE
	cd e2e && GOWORK=off go build -o $@ ./cmd/testbed

.PHONY: tools
tools: testbed-bins $(TESTBEDCTL) $(HELM_DIR)/helm ## Build every tool the tests use (cached in bin/ by version)

.PHONY: bench
bench: build testbed-bins $(TESTBEDCTL) ## Every benchmark on the testbed (started for the run unless KUBECONFIG is set); prints the numbers
	hack/with-testbed.sh bash -c 'cd e2e && GOWORK=off go test -run "^$$" -bench . -benchtime $(BENCHTIME) -timeout 30m ./bench/...'
BENCHTIME ?= 2000x

.PHONY: bench-volumeclaims
bench-volumeclaims: build testbed-bins $(TESTBEDCTL) ## volumeclaims against a bare client and upstream JobSet; prints a table
	cd controllers/volumeclaims && GOWORK=off go test -run '^$$' -bench '^BenchmarkPodWebhook$$' -benchmem ./internal/webhook/ && \
		GOWORK=off go test -run '^$$' -bench 'PodWebhookOverTLS' -benchtime 1x ./internal/webhook/
	hack/with-testbed.sh bash -c 'cd e2e && GOWORK=off go test -run "^$$" -bench VolumeClaims -benchtime 1x -timeout 30m ./bench/...'

.PHONY: bench-sequencer
bench-sequencer: build testbed-bins $(TESTBEDCTL) ## sequencer hand-off against upstream JobSet dependsOn, same run; prints a table
	hack/with-testbed.sh bash -c 'cd e2e && GOWORK=off go test -run "^$$" -bench Sequencer -benchtime 1x -timeout 30m ./bench/...'

.PHONY: bench-podgroups
bench-podgroups: build testbed-bins $(TESTBEDCTL) ## podgroups against a bare client; update while suspended; prints a table
	hack/with-testbed.sh bash -c 'cd e2e && GOWORK=off go test -run "^$$" -bench PodGroups -benchtime 1x -timeout 30m ./bench/...'

.PHONY: bench-resourceclaims
bench-resourceclaims: build testbed-bins $(TESTBEDCTL) ## resourceclaims against a bare client; Job webhook latency; prints a table
	cd controllers/resourceclaims && GOWORK=off go test -run '^$$' -bench '^BenchmarkJobWebhook$$' -benchmem ./internal/webhook/
	hack/with-testbed.sh bash -c 'cd e2e && GOWORK=off go test -run "^$$" -bench ResourceClaims -benchtime 1x -timeout 30m ./bench/...'

.PHONY: testbed-up
testbed-up: testbed-bins $(TESTBEDCTL) ## Start the local testbed and print its KUBECONFIG
	$(TESTBEDCTL) up

.PHONY: testbed-down
testbed-down: $(TESTBEDCTL) ## Stop the testbed; no process or port is left
	$(TESTBEDCTL) down

.PHONY: demo
demo: build testbed-bins $(TESTBEDCTL) ## Start the testbed, run the controllers, apply examples/, show what happened
	hack/demo.sh

.PHONY: demo-down
demo-down: $(TESTBEDCTL) ## Stop what make demo started: the testbed and every controller on it
	$(TESTBEDCTL) down

.PHONY: chart-verify
chart-verify: testbed-bins $(TESTBEDCTL) $(HELM_DIR)/helm ## helm lint, render every toggle combination, server-side dry-run on the testbed
	hack/with-testbed.sh env HELM=$(HELM_DIR)/helm KUBECTL=$(TESTBED)/kubectl hack/chart-verify.sh

