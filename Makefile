# jobset-addons. `make help` lists the targets.
SHELL := /usr/bin/env bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := build

ROOT := $(abspath .)
BIN  := $(ROOT)/bin

# Versions of everything the testbed and the checks build. A binary is cached under
# bin/<name>-<version>/ and rebuilt only when its version changes.
KUBE_VERSION   := v1.37.2
ETCD_VERSION   := v3.6.6
KWOK_VERSION   := v0.8.0
JOBSET_VERSION := v0.12.0
HELM_VERSION   := v4.3.0
VOLCANO_VERSION      := v1.10.0
# scheduler-plugins' coscheduling scheduler of bin/testbed: tools/schedplugins pins
# SCHEDPLUGINS_DEFAULT (v0.34.7: built on Kubernetes 1.34, it allocates DRA claims through
# resource.k8s.io/v1), tools/schedplugins-v0.33.5 the older one (NEIGHBOURS=old, or
# SCHEDPLUGINS_VERSION=v0.33.5).
SCHEDPLUGINS_DEFAULT := v0.34.7
SCHEDPLUGINS_OLD     := v0.33.5
VULN_VERSION         := v1.9.0
KIND_VERSION         := v0.33.0
# Prometheus and promtool (make e2e-observability, make unit's promtool test rules): module
# v0.316.0 is Prometheus 3.16.0.
PROMETHEUS_VERSION   := v0.316.0
KO_VERSION           := v0.18.0
CONTAINERD_VERSION   := v2.3.4
CRICTL_VERSION       := v1.37.0
# The neighbours (make e2e-neighbours): the newest by default; NEIGHBOURS=old picks the older ones
# of the compatibility matrix (docs/compatibility.md), or KUEUE_VERSION=... / TRAINER_VERSION=...
# one of them. tools/<tool> pins the newest, tools/<tool>-<version> each older one.
KUEUE_NEWEST   := v0.19.2
TRAINER_NEWEST := v2.3.0
KUEUE_OLD      := v0.17.0
TRAINER_OLD    := v2.1.0
NEIGHBOURS     ?= new
SCHEDPLUGINS_VERSION := $(if $(filter old,$(NEIGHBOURS)),$(SCHEDPLUGINS_OLD),$(SCHEDPLUGINS_DEFAULT))
KUEUE_VERSION   := $(if $(filter old,$(NEIGHBOURS)),$(KUEUE_OLD),$(KUEUE_NEWEST))
TRAINER_VERSION := $(if $(filter old,$(NEIGHBOURS)),$(TRAINER_OLD),$(TRAINER_NEWEST))
kueue_mod   = $(if $(filter $(KUEUE_NEWEST),$1),tools/kueue,tools/kueue-$1)
trainer_mod = $(if $(filter $(TRAINER_NEWEST),$1),tools/trainer,tools/trainer-$1)
schedplugins_mod = $(if $(filter $(SCHEDPLUGINS_DEFAULT),$1),tools/schedplugins,tools/schedplugins-$1)

ETCD_DIR   := $(BIN)/etcd-$(ETCD_VERSION)
KWOK_DIR   := $(BIN)/kwok-$(KWOK_VERSION)
HELM_DIR   := $(BIN)/helm-$(HELM_VERSION)
VOLCANO_DIR      := $(BIN)/volcano-$(VOLCANO_VERSION)
SCHEDPLUGINS_DIR := $(BIN)/scheduler-plugins-$(SCHEDPLUGINS_VERSION)
GOVULNCHECK      := $(BIN)/govulncheck-$(VULN_VERSION)/govulncheck
KIND             := $(BIN)/kind-$(KIND_VERSION)/kind
KO               := $(BIN)/ko-$(KO_VERSION)/ko
CONTAINERD_DIR   := $(BIN)/containerd-$(CONTAINERD_VERSION)
KUEUE_DIR        := $(BIN)/kueue-$(KUEUE_VERSION)

# The matrix `make e2e-compat` runs: <kube>-<jobset> pairs. Other versions of a tool are built
# from their own wrapper module, tools/<tool>-<version> (tools/<tool> pins the default).
COMPAT_COMBOS := $(KUBE_VERSION)-v0.8.0 $(KUBE_VERSION)-v0.10.1 $(KUBE_VERSION)-v0.12.0 v1.34.4-v0.12.0
kube_of   = $(word 1,$(subst -, ,$1))
jobset_of = $(word 2,$(subst -, ,$1))
COMPAT_KUBE_VERSIONS   := $(sort $(KUBE_VERSION) $(foreach c,$(COMPAT_COMBOS),$(call kube_of,$c)))
COMPAT_JOBSET_VERSIONS := $(sort $(JOBSET_VERSION) $(foreach c,$(COMPAT_COMBOS),$(call jobset_of,$c)))
kube_mod   = $(if $(filter $(KUBE_VERSION),$1),tools/kube,tools/kube-$1)
jobset_mod = $(if $(filter $(JOBSET_VERSION),$1),tools/jobset,tools/jobset-$1)

kube_ldflags = $(foreach p,k8s.io/component-base/version k8s.io/client-go/pkg/version,\
	-X $(p).gitVersion=$1 -X $(p).gitMajor=$(word 1,$(subst ., ,$(patsubst v%,%,$1))) \
	-X $(p).gitMinor=$(word 2,$(subst ., ,$1)) -X $(p).gitTreeState=clean -X $(p).buildDate=1970-01-01T00:00:00Z)

KUBE_BINS := kube-apiserver kube-controller-manager kube-scheduler kubectl
# testbed_bins KUBE,JOBSET: every binary a testbed of those versions runs.
testbed_bins = $(addprefix $(BIN)/kube-$1/,$(KUBE_BINS)) $(ETCD_DIR)/etcd \
	$(KWOK_DIR)/kwok $(KWOK_DIR)/kwokctl $(BIN)/jobset-$2/jobset $(HELM_DIR)/helm \
	$(VOLCANO_DIR)/vc-scheduler $(SCHEDPLUGINS_DIR)/sp-scheduler
TESTBED_BINS := $(call testbed_bins,$(KUBE_VERSION),$(JOBSET_VERSION))

define kube_rule
$(BIN)/kube-$1/%: $(call kube_mod,$1)/go.mod
	hack/build-tool.sh $(call kube_mod,$1) $$@ k8s.io/kubernetes/cmd/$$* "$(call kube_ldflags,$1)"
endef
define jobset_rule
$(BIN)/jobset-$1/jobset: $(call jobset_mod,$1)/go.mod
	hack/build-tool.sh $(call jobset_mod,$1) $$@ sigs.k8s.io/jobset \
		"-X sigs.k8s.io/jobset/pkg/version.GitVersion=$1"
endef
$(foreach v,$(COMPAT_KUBE_VERSIONS),$(eval $(call kube_rule,$v)))
$(foreach v,$(COMPAT_JOBSET_VERSIONS),$(eval $(call jobset_rule,$v)))
$(ETCD_DIR)/etcd: tools/etcd/go.mod
	hack/build-tool.sh tools/etcd $@ go.etcd.io/etcd/server/v3 \
		"-X go.etcd.io/etcd/api/v3/version.GitSHA=$(ETCD_VERSION)"
$(KWOK_DIR)/%: tools/kwok/go.mod
	hack/build-tool.sh tools/kwok $@ sigs.k8s.io/kwok/cmd/$* \
		"-X sigs.k8s.io/kwok/pkg/consts.Version=$(patsubst v%,%,$(KWOK_VERSION))"
$(HELM_DIR)/helm: tools/helm/go.mod
	hack/build-tool.sh tools/helm $@ helm.sh/helm/v4/cmd/helm
# The two gang schedulers podgroups drives, each run on the testbed as a second scheduler.
$(VOLCANO_DIR)/vc-scheduler: tools/volcano/go.mod
	hack/build-tool.sh tools/volcano $@ volcano.sh/volcano/cmd/scheduler
$(SCHEDPLUGINS_DIR)/sp-scheduler: $(call schedplugins_mod,$(SCHEDPLUGINS_VERSION))/go.mod
	hack/build-tool.sh $(call schedplugins_mod,$(SCHEDPLUGINS_VERSION)) $@ sigs.k8s.io/scheduler-plugins/cmd/scheduler

# Kueue, run beside JobSet by the neighbour suites (make e2e-neighbours): its own wrapper module,
# on its own Kubernetes and JobSet versions (v0.19.2: k8s.io/api v0.36, JobSet v0.12.0; v0.17.0:
# k8s.io/api v0.35, JobSet v0.11.1), a separate binary.
$(KUEUE_DIR)/kueue: $(call kueue_mod,$(KUEUE_VERSION))/go.mod
	hack/build-tool.sh $(call kueue_mod,$(KUEUE_VERSION)) $@ sigs.k8s.io/kueue/cmd/kueue \
		"-X sigs.k8s.io/kueue/pkg/version.GitVersion=$(KUEUE_VERSION) -X sigs.k8s.io/kueue/pkg/version.BuildDate=1970-01-01"

# Upstream JobSet's own e2e suite (test/e2e of its module), a test binary built from
# tools/jobset-e2e, which pins the same JobSet as tools/jobset (make e2e-upstream).
JOBSET_E2E := $(BIN)/jobset-e2e-$(JOBSET_VERSION)/e2e.test
$(JOBSET_E2E): tools/jobset-e2e/go.mod
	@mkdir -p $(dir $@)
	cd tools/jobset-e2e && GOWORK=off CGO_ENABLED=0 go test -c -trimpath -o $@.tmp sigs.k8s.io/jobset/test/e2e
	mv $@.tmp $@

# Kubeflow Trainer, run beside JobSet by `testbedctl trainer` (the trainer suite): its controller
# manager from tools/trainer (tools/trainer-<version> for an older one), its CRDs and webhook
# configuration from its module. bin/testbed/trainer-version names the one the testbed runs.
TRAINER_DIR := $(BIN)/trainer-$(TRAINER_VERSION)
$(TRAINER_DIR)/trainer-controller-manager: $(call trainer_mod,$(TRAINER_VERSION))/go.mod
	hack/build-tool.sh $(call trainer_mod,$(TRAINER_VERSION)) $@ github.com/kubeflow/trainer/v2/cmd/trainer-controller-manager
$(TRAINER_DIR)/.stamp: $(TRAINER_DIR)/trainer-controller-manager
	src=$$(cd $(call trainer_mod,$(TRAINER_VERSION)) && GOWORK=off go list -m -f '{{.Dir}}' github.com/kubeflow/trainer/v2) && \
		rm -rf $(TRAINER_DIR)/crds && mkdir -p $(TRAINER_DIR)/crds && \
		cp $$src/manifests/base/crds/trainer.kubeflow.org_*.yaml $(TRAINER_DIR)/crds/ && \
		cp $$src/manifests/base/webhook/manifests.yaml $(TRAINER_DIR)/webhooks.yaml && \
		chmod -R u+w $(TRAINER_DIR)/crds $(TRAINER_DIR)/webhooks.yaml
	touch $@

# Built with Prometheus' own remove_all_sd tag: the tests scrape static targets only, and the
# cloud service discoveries (AWS, Azure, GCE, Kubernetes, ...) were most of a cold build.
PROMETHEUS_DIR := $(BIN)/prometheus-$(PROMETHEUS_VERSION)-nosd
PROMETHEUS_LDFLAGS := -X github.com/prometheus/common/version.Version=3.16.0
$(PROMETHEUS_DIR)/%: tools/prometheus/go.mod
	GOFLAGS=-tags=remove_all_sd hack/build-tool.sh tools/prometheus $@ github.com/prometheus/prometheus/cmd/$* "$(PROMETHEUS_LDFLAGS)"
# The Prometheus Operator's ServiceMonitor and PrometheusRule CRDs, from its module (make
# chart-verify applies them to the testbed to dry-run the chart's monitoring objects).
PROMETHEUS_OPERATOR_VERSION := v0.94.0
PROMETHEUS_CRDS := $(BIN)/prometheus-operator-crds-$(PROMETHEUS_OPERATOR_VERSION)
$(PROMETHEUS_CRDS)/.stamp:
	src=$$(GOWORK=off go mod download -json github.com/prometheus-operator/prometheus-operator@$(PROMETHEUS_OPERATOR_VERSION) | sed -n 's/^	"Dir": "\(.*\)",$$/\1/p') && \
		rm -rf $(PROMETHEUS_CRDS) && mkdir -p $(PROMETHEUS_CRDS) && \
		cp $$src/example/prometheus-operator-crd/monitoring.coreos.com_servicemonitors.yaml $$src/example/prometheus-operator-crd/monitoring.coreos.com_prometheusrules.yaml $(PROMETHEUS_CRDS)/ && \
		chmod u+w $(PROMETHEUS_CRDS)/*.yaml
	touch $@
.PHONY: prometheus-bins
prometheus-bins: $(PROMETHEUS_DIR)/prometheus $(PROMETHEUS_DIR)/promtool ## Build (once) Prometheus and promtool $(PROMETHEUS_VERSION)

$(GOVULNCHECK): tools/vuln/go.mod
	hack/build-tool.sh tools/vuln $@ golang.org/x/vuln/cmd/govulncheck
$(KIND): tools/kind/go.mod
	hack/build-tool.sh tools/kind $@ sigs.k8s.io/kind
$(KO): tools/ko/go.mod
	hack/build-tool.sh tools/ko $@ github.com/google/ko
# The kind node image (make kind-image): containerd, the node's Kubernetes binaries and pause.
$(CONTAINERD_DIR)/%: tools/containerd/go.mod
	hack/build-tool.sh tools/containerd $@ github.com/containerd/containerd/v2/cmd/$* \
		"-X github.com/containerd/containerd/v2/version.Version=$(CONTAINERD_VERSION)"
$(CONTAINERD_DIR)/crictl: tools/crictl/go.mod
	hack/build-tool.sh tools/crictl $@ sigs.k8s.io/cri-tools/cmd/crictl \
		"-X sigs.k8s.io/cri-tools/pkg/version.Version=$(CRICTL_VERSION)"
KIND_NODE_BINS := $(addprefix $(BIN)/kube-$(KUBE_VERSION)/,$(KUBE_BINS) kubelet kubeadm kube-proxy) \
	$(addprefix $(CONTAINERD_DIR)/,containerd containerd-shim-runc-v2 ctr crictl) $(ETCD_DIR)/etcd $(BIN)/pause
$(BIN)/pause: e2e/kindbed/images/pause/main.go
	cd e2e && GOWORK=off CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o $@ ./kindbed/images/pause

# bin/testbed is the one directory the testbed, envtest (KUBEBUILDER_ASSETS) and kwokctl's
# PATH look in: links to the versioned binaries above, and JobSet's manifests.
# bin/testbed-<kube>-<jobset> is the same for other versions (TESTBED_BIN_DIR, make e2e-compat).
TESTBED := $(BIN)/testbed
mod_dir = $(shell cd $1 && GOWORK=off go list -m -f '{{.Dir}}' $2)
VOLCANO_SRC = $(call mod_dir,tools/volcano,volcano.sh/volcano)
SCHEDPLUGINS_SRC = $(call mod_dir,$(call schedplugins_mod,$(SCHEDPLUGINS_VERSION)),sigs.k8s.io/scheduler-plugins)
# link_testbed DIR,KUBE,JOBSET: the recipe that fills DIR.
link_testbed = hack/link-testbed.sh $1 $3 $(call mod_dir,$(call jobset_mod,$3),sigs.k8s.io/jobset) \
	$(VOLCANO_SRC) $(SCHEDPLUGINS_SRC) $(call testbed_bins,$2,$3)
TESTBED_STAMP := $(TESTBED)/.stamp-$(KUBE_VERSION)-$(ETCD_VERSION)-$(KWOK_VERSION)-$(JOBSET_VERSION)-$(HELM_VERSION)-$(VOLCANO_VERSION)-$(SCHEDPLUGINS_VERSION)

$(TESTBED_STAMP): $(TESTBED_BINS)
	$(call link_testbed,$(TESTBED),$(KUBE_VERSION),$(JOBSET_VERSION))
	touch $@

COMPAT_STAMP = .stamp-$(ETCD_VERSION)-$(KWOK_VERSION)-$(HELM_VERSION)-$(VOLCANO_VERSION)-$(SCHEDPLUGINS_VERSION)
COMPAT_STAMPS := $(foreach c,$(COMPAT_COMBOS),$(BIN)/testbed-$c/$(COMPAT_STAMP))
.SECONDEXPANSION:
$(COMPAT_STAMPS): $(BIN)/testbed-%/$(COMPAT_STAMP): $$(call testbed_bins,$$(call kube_of,$$*),$$(call jobset_of,$$*))
	$(call link_testbed,$(BIN)/testbed-$*,$(call kube_of,$*),$(call jobset_of,$*))
	touch $@

.PHONY: testbed-bins
testbed-bins: $(TESTBED_STAMP) ## Build (once) every binary the testbed runs

# Kueue in bin/testbed beside the rest: the binary, and kueue-src, the directory of its module
# source, from which the testbed takes Kueue's CRDs and webhook configurations when it starts it.
KUEUE_STAMP := $(TESTBED)/.stamp-kueue-$(KUEUE_VERSION)
$(KUEUE_STAMP): $(TESTBED_STAMP) $(KUEUE_DIR)/kueue
	rm -f $(TESTBED)/.stamp-kueue-*
	ln -sf $(KUEUE_DIR)/kueue $(TESTBED)/kueue
	echo $(call mod_dir,$(call kueue_mod,$(KUEUE_VERSION)),sigs.k8s.io/kueue) >$(TESTBED)/kueue-src
	echo $(KUEUE_VERSION) >$(TESTBED)/kueue-version
	touch $@

.PHONY: kueue-bins
kueue-bins: $(KUEUE_STAMP) ## Build (once) Kueue $(KUEUE_VERSION) and link it into bin/testbed (testbedctl kueue)

# Trainer named in bin/testbed: trainer-version, the version testbed.StartTrainer runs (from
# bin/trainer-<version>).
TRAINER_STAMP := $(TESTBED)/.stamp-trainer-$(TRAINER_VERSION)
$(TRAINER_STAMP): $(TESTBED_STAMP) $(TRAINER_DIR)/.stamp
	rm -f $(TESTBED)/.stamp-trainer-*
	echo $(TRAINER_VERSION) >$(TESTBED)/trainer-version
	touch $@
.PHONY: trainer-bins
trainer-bins: $(TRAINER_STAMP) ## Build (once) Kubeflow Trainer $(TRAINER_VERSION), copy its CRDs and webhooks from its module, name it in bin/testbed

CONTROLLERS := volumeclaims resourceclaims sequencer podgroups
# Our modules (go.work) and the wrapper modules that pin the testbed's tools (not in go.work:
# they pin other Kubernetes versions).
MODULES := pkg/contract pkg/addon $(addprefix controllers/,$(CONTROLLERS)) cmd/kubectl-jobset-addons e2e
TOOL_MODULES := tools/kube tools/etcd tools/kueue tools/kueue-$(KUEUE_OLD) tools/kwok tools/jobset tools/jobset-e2e tools/trainer tools/trainer-$(TRAINER_OLD) tools/helm tools/volcano tools/schedplugins tools/schedplugins-$(SCHEDPLUGINS_OLD) tools/vuln tools/prometheus tools/kind tools/ko tools/containerd tools/crictl tools/coredns charts/jobset-addons/tests hack/release \
	$(foreach v,$(filter-out $(KUBE_VERSION),$(COMPAT_KUBE_VERSIONS)),tools/kube-$v) \
	$(foreach v,$(filter-out $(JOBSET_VERSION),$(COMPAT_JOBSET_VERSIONS)),tools/jobset-$v)

GO_TEST_FLAGS ?= -count=1
export KUBEBUILDER_ASSETS := $(BIN)/testbed
# Where the observability suite finds prometheus and promtool.
export PROMETHEUS_BIN_DIR := $(PROMETHEUS_DIR)

# Releases (docs/releasing.md): make release VERSION=vX.Y.Z writes dist/, with no Docker.
RELEASE_TOOL := $(BIN)/release
$(RELEASE_TOOL): FORCE
	cd hack/release && GOWORK=off go build -o $@ .
RELEASE_ENV = KO=$(KO) HELM=$(HELM_DIR)/helm RELEASE_TOOL=$(RELEASE_TOOL) GOVULNCHECK=$(GOVULNCHECK) RELEASE_MODULES="$(MODULES)"

.PHONY: release
release: ## dist/ for VERSION: images (ko, amd64+arm64, SBOMs), chart pinned by digest, kubectl plugin archives + krew manifest, SHA256SUMS; built twice, must match
	@hack/release.sh --preflight $(VERSION)
	@$(MAKE) --no-print-directory $(KO) $(HELM_DIR)/helm $(RELEASE_TOOL) $(if $(filter 1,$(RELEASE_SKIP_VULNCHECK)),,$(GOVULNCHECK))
	$(RELEASE_ENV) hack/release.sh $(VERSION)

.PHONY: release-push
release-push: $(HELM_DIR)/helm $(RELEASE_TOOL) ## Push dist/ (images, their SBOMs, the chart by helm OCI) to REGISTRY=host:port/prefix
	$(RELEASE_ENV) hack/release-push.sh $(VERSION) $(REGISTRY)

.PHONY: release-check
release-check: $(HELM_DIR)/helm $(RELEASE_TOOL) ## make release-push of dist/ to a registry on the host, then helm pull/template from it: images pinned, digests resolve (with KUBECONFIG: server-side dry-run); where Docker answers, a kind cluster installs it from there and runs a JobSet per add-on; the release's refusals
	$(RELEASE_ENV) KUBECTL=$(TESTBED)/kubectl hack/release-check.sh $(VERSION)

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
	@for m in $(MODULES) hack/release; do echo "== $$m (GOWORK=off)"; (cd $$m && GOWORK=off go vet ./... && GOWORK=off go build -o /dev/null ./...) || exit 1; done
	@cd pkg/contract && GOWORK=off go run ./internal/docgen -check $(ROOT)/docs/reference.md
	@$(MAKE) --no-print-directory vulncheck
	@echo "verify: ok"

.PHONY: vulncheck
vulncheck: $(GOVULNCHECK) ## govulncheck every module against $$GOVULNDB, else ../shared/vulndb if there, else vuln.go.dev; and proves a reached fake entry fails it
	@hack/vulncheck.sh $(GOVULNCHECK) $(MODULES)
	@hack/vulncheck-selftest.sh $(GOVULNCHECK)

.PHONY: unit
unit: testbed-bins $(PROMETHEUS_DIR)/promtool ## Unit and integration tests of every module (integration runs envtest on bin/testbed); promtool tests the alerts
	$(PROMETHEUS_DIR)/promtool check rules charts/jobset-addons/files/alerts.yaml
	$(PROMETHEUS_DIR)/promtool test rules charts/jobset-addons/tests/promtool/alerts_test.yaml
	@for m in $(filter-out e2e,$(MODULES)) charts/jobset-addons/tests hack/release; do (cd $$m && GOWORK=off go test $(GO_TEST_FLAGS) ./...) || exit 1; done
	@# The e2e module's own unit tests (kind's images and JobSet's gates there, the compat table,
	@# the testbed's metrics parsing): the rest of it needs a cluster (make e2e).
	cd e2e && GOWORK=off go test $(GO_TEST_FLAGS) ./kindbed/... ./cmd/... ./testbed/

.PHONY: e2e
e2e: testbed-bins kueue-bins trainer-bins prometheus-bins build ## e2e suites, one after another, on the testbed (started for the run unless KUBECONFIG is set), the neighbour suites reduced; the kind suite is make e2e-kind
	cd e2e && GOWORK=off go test $(GO_TEST_FLAGS) -p 1 -timeout 30m -v -skip '^($(NEIGHBOUR_FULL_TESTS)|$(GATE_OFF_TESTS)|$(JOBSET_GATES_FULL_TESTS)|$(OBSERVABILITY_FULL_TESTS))$$' $$(GOWORK=off go list ./suites/... | grep -v -e /suites/kind -e /suites/multicluster) 2>&1 | $(ROOT)/hack/test-summary.sh

# The suites that run the add-ons beside other projects' controllers (Kueue, ...), each started
# on the testbed by its suite. make e2e runs them reduced: go test -skip leaves out (not run, not
# reported) NEIGHBOUR_FULL_TESTS, test names no other suite uses; make e2e-neighbours runs all.
NEIGHBOUR_SUITES := ./suites/kueue/ ./suites/trainer/
NEIGHBOUR_FULL_TESTS := TestPreemption|TestTopologyAwareScheduling|TestGangs|TestCoschedulingClaims|TestWaitForPodsReady
# Cases that need a testbed whose Kubernetes has a feature gate off (make e2e leaves them out):
# each runs on a testbed of its own, started by its suite with TESTBED_KUBE_FEATURE_GATES.
GATE_OFF_TESTS := TestClaimOnPodGroupGateOff
GATES_WITHOUT_DRA_WORKLOAD_CLAIMS := GenericWorkload=true,TopologyAwareWorkloadScheduling=true,CompositePodGroup=true
.PHONY: e2e-gate-off
e2e-gate-off: testbed-bins build ## The cases of a Kubernetes with a gate off, each on a testbed of its own: DRAWorkloadResourceClaims off (a Job of 300 pods sharing a claim is refused)
	cd e2e && env -u KUBECONFIG TESTBED_KUBE_FEATURE_GATES=$(GATES_WITHOUT_DRA_WORKLOAD_CLAIMS) GOWORK=off go test $(GO_TEST_FLAGS) -timeout 10m -v -run '^($(GATE_OFF_TESTS))$$' ./suites/resourceclaims/ 2>&1 | $(ROOT)/hack/test-summary.sh

# JobSet's alpha gates, all on in the testbed's JobSet (and kind's): e2e/suites/gates. make e2e
# runs one case per gate (TestElastic, TestInPlaceRestart, TestRestartJob) and leaves out
# JOBSET_GATES_FULL_TESTS (go test -skip; test names no other suite uses); make e2e-gates runs all.
JOBSET_GATES_FULL_TESTS := TestElasticBackends|TestElasticRetention|TestRestartJobRetainedClaim
.PHONY: e2e-gates
e2e-gates: testbed-bins build ## JobSet's alpha gates (ElasticJobSet, InPlaceRestart, RestartJob) beside the four add-ons, every case: each backend's gang following a scale, removed indexes' PVCs deleted on completion, RestartJob with a retained claim
	cd e2e && GOWORK=off go test $(GO_TEST_FLAGS) -timeout 15m -v ./suites/gates/ 2>&1 | $(ROOT)/hack/test-summary.sh

# Observability (e2e/suites/observability): a real Prometheus scrapes the four add-ons on the
# testbed and evaluates the chart's dashboard queries and alerts. make e2e leaves out
# OBSERVABILITY_FULL_TESTS (go test -skip); make e2e-observability runs all.
OBSERVABILITY_FULL_TESTS := TestAlertsFireOnWorkload
.PHONY: e2e-observability
e2e-observability: testbed-bins prometheus-bins build ## A real Prometheus $(PROMETHEUS_VERSION) scrapes the four add-ons while JobSets run: every dashboard query and alert expression returns series, promtool checks rules and /metrics, alerts fire (an add-on stopped, a PVC held, JobSets waiting)
	cd e2e && GOWORK=off go test $(GO_TEST_FLAGS) -timeout 15m -v ./suites/observability/ 2>&1 | $(ROOT)/hack/test-summary.sh

.PHONY: e2e-neighbours
e2e-neighbours: testbed-bins kueue-bins trainer-bins build $(JOBSET_E2E) ## The add-ons beside their neighbours, in full: real Kueue $(KUEUE_VERSION) (queueing, preemption, topology-aware scheduling, gangs), Kubeflow Trainer $(TRAINER_VERSION), then make e2e-upstream
	cd e2e && GOWORK=off go test $(GO_TEST_FLAGS) -p 1 -timeout 30m -v $(NEIGHBOUR_SUITES) 2>&1 | $(ROOT)/hack/test-summary.sh
	$(MAKE) --no-print-directory e2e-upstream

# The add-ons across clusters (e2e/suites/multicluster): Kueue's MultiKueue on testbeds of the
# suite's own, a manager and a worker (TESTBED_PORT_BASE and 1000 above it), and for
# MULTICLUSTER_FULL_TESTS a second worker (400 above the manager's). make e2e leaves the suite
# out (it runs on a testbed already up); make test runs it without them once its testbed is down
# (MULTICLUSTER_REDUCED=1: TestDispatched, about a minute); make e2e-multicluster runs all (about 3).
MULTICLUSTER_FULL_TESTS := TestRedispatch
.PHONY: e2e-multicluster
e2e-multicluster: testbed-bins kueue-bins build ## The add-ons across clusters with Kueue $(KUEUE_VERSION)'s MultiKueue: a manager and two worker testbeds; JobSets queued in the manager run in a worker, their objects there only; eviction and re-dispatch with a checkpoint PVC
	cd e2e && env -u KUBECONFIG GOWORK=off go test $(GO_TEST_FLAGS) -timeout 20m -v $(if $(MULTICLUSTER_REDUCED),-skip '^($(MULTICLUSTER_FULL_TESTS))$$') ./suites/multicluster/ 2>&1 | $(ROOT)/hack/test-summary.sh

.PHONY: e2e-upstream
e2e-upstream: build testbed-bins $(JOBSET_E2E) ## Upstream JobSet's own e2e suite on the testbed twice, with the four add-ons running and without: the same specs must pass; prints the counts
	hack/with-testbed.sh bash -c 'cd e2e && GOWORK=off go run ./cmd/upstream -suite $(JOBSET_E2E)'

# Not part of make test: it builds another Kubernetes and two more JobSets (about 20 minutes on 2
# cores, once), then runs for about 10 minutes.
.PHONY: e2e-compat
e2e-compat: build $(COMPAT_STAMPS) ## Compatibility matrix: core e2e cases of each add-on on every COMPAT_COMBOS (<kube>-<jobset>), each on a fresh testbed; writes docs/compatibility.md
	cd e2e && GOWORK=off go run ./cmd/compat -out $(ROOT)/docs/compatibility.md \
		-command "$(if $(TESTBED_PORT_BASE),TESTBED_PORT_BASE=$(TESTBED_PORT_BASE) )make e2e-compat" $(COMPAT_COMBOS)

.PHONY: test
test: ## Everything CI runs: verify, unit and integration, e2e on a fresh testbed, chart checks
	hack/test.sh

# The kind path (docs/kind.md): a node image built here offline, images loaded into it after it
# is up, the chart installed, real pods. make test runs it where a Docker engine answers.
KIND_MOD = $(call mod_dir,tools/kind,sigs.k8s.io/kind)
KIND_ENV = KIND=$(KIND) HELM=$(HELM_DIR)/helm KUBECTL=$(TESTBED)/kubectl KO=$(KO) \
	JOBSET_SRC=$(call mod_dir,tools/jobset,sigs.k8s.io/jobset) SCHEDPLUGINS_SRC=$(SCHEDPLUGINS_SRC)

.PHONY: kind-image
kind-image: $(KIND_NODE_BINS) ## The kind node image for Kubernetes $(KUBE_VERSION), built offline and cached by content (needs Docker and debootstrap)
	@mkdir -p $(BIN)/kind
	hack/kind/node-image.sh $(KIND_MOD) $(BIN)/kube-$(KUBE_VERSION) $(CONTAINERD_DIR) $(ETCD_DIR)/etcd $(BIN)/pause >$(BIN)/kind/node-image.tmp
	mv $(BIN)/kind/node-image.tmp $(BIN)/kind/node-image

.PHONY: kind-images
kind-images: $(KO) ## Every image a kind cluster loads (add-ons, JobSet, DRA driver, coscheduling, workload), into the Docker engine
	hack/kind/images.sh $(KO) $$(hack/kind/rootfs.sh)

# The kind suite's full cases, which make test leaves out (KIND_REDUCED=1): the rest of the
# distributed-start stories (jobset #971, issue 35); make test keeps TestRendezvousAcrossNodes (a
# rendezvous across nodes through JobSet DNS names) and TestStartBarrierLinesUpStarts (the start
# barrier on real pods, some 35 s).
KIND_FULL_TESTS := TestRendezvousTimeoutRestarts|TestStartBarrierStages|TestStartBarrierTimeout
.PHONY: e2e-kind
e2e-kind: ## e2e on a kind cluster of real containers with the chart installed (KIND_NODE_IMAGE to use another node image; KIND_REDUCED=1: without the full distributed-start cases, as make test runs it); says SKIPPED without Docker
	@if ! docker info >/dev/null 2>&1; then \
		echo "e2e-kind: SKIPPED, not passed: no Docker engine answers ('docker info' fails), so no kind cluster; nothing was built, installed or tested"; \
	else $(MAKE) --no-print-directory kind-up-deps && \
		cd e2e && $(KIND_ENV) GOWORK=off go test $(GO_TEST_FLAGS) -timeout 30m -v $(if $(KIND_REDUCED),-skip '^($(KIND_FULL_TESTS))$$') ./suites/kind/ 2>&1 | $(ROOT)/hack/test-summary.sh; fi

# The kind suite against a release pulled from a registry (make release-check sets KIND_REGISTRY,
# KIND_CHART, KIND_CHART_VERSION): the add-on pods, and one JobSet per add-on on real pods.
KIND_RELEASE_TESTS := TestAddonPods|TestWebhooksThroughServices|TestCheckpointsSurviveRestart|TestSharedModelInOrder|TestClaimPerJobSeenByContainer|TestGangOnRealPods
.PHONY: e2e-kind-release
e2e-kind-release: kind-up-deps
	cd e2e && $(KIND_ENV) GOWORK=off go test -count=1 -timeout 30m -v -run '^($(KIND_RELEASE_TESTS))$$' ./suites/kind/ 2>&1 | $(ROOT)/hack/test-summary.sh

.PHONY: bench-kind
bench-kind: kind-up-deps ## First real-node figures on kind: 8 pods with all four add-ons against a plain JobSet; the sequencer's hand-off
	cd e2e && $(KIND_ENV) GOWORK=off go test -count=1 -run '^$$' -bench RealNodes -benchtime 1x -timeout 30m ./bench/kind/

.PHONY: kind-up-deps
kind-up-deps: testbed-bins $(KIND) $(KO) $(HELM_DIR)/helm $(if $(KIND_NODE_IMAGE),,kind-image) kind-images

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
tools: testbed-bins kueue-bins trainer-bins prometheus-bins $(JOBSET_E2E) $(TESTBEDCTL) $(HELM_DIR)/helm ## Build every tool the tests use (cached in bin/ by version)

.PHONY: bench
bench: build testbed-bins $(TESTBEDCTL) ## Every benchmark on the testbed (started for the run unless KUBECONFIG is set); prints the numbers
	hack/with-testbed.sh bash -c 'cd e2e && GOWORK=off go test -run "^$$" -bench . -benchtime $(BENCHTIME) -timeout 30m ./bench/'
BENCHTIME ?= 2000x

.PHONY: bench-volumeclaims
bench-volumeclaims: build testbed-bins $(TESTBEDCTL) ## volumeclaims against a bare client and upstream JobSet; prints a table
	cd controllers/volumeclaims && GOWORK=off go test -run '^$$' -bench '^BenchmarkPodWebhook$$' -benchmem ./internal/webhook/ && \
		GOWORK=off go test -run '^$$' -bench 'PodWebhookOverTLS' -benchtime 1x ./internal/webhook/
	hack/with-testbed.sh bash -c 'cd e2e && GOWORK=off go test -run "^$$" -bench VolumeClaims -benchtime 1x -timeout 30m ./bench/'

.PHONY: bench-sequencer
bench-sequencer: build testbed-bins $(TESTBEDCTL) ## sequencer hand-off against upstream JobSet dependsOn, same run; prints a table
	hack/with-testbed.sh bash -c 'cd e2e && GOWORK=off go test -run "^$$" -bench Sequencer -benchtime 1x -timeout 30m ./bench/'

.PHONY: bench-barrier
bench-barrier: build testbed-bins $(TESTBEDCTL) ## sequencer's start barrier: opening BENCH_BARRIER_PODS (400) pods against a bare loop of the same writes at the same QPS; requests per pod; prints a table (10,000 pods: BENCH_BARRIER_PODS=10000 TESTBED_NODES=100)
	hack/with-testbed.sh bash -c 'cd e2e && GOWORK=off go test -run "^$$" -bench StartBarrier -benchtime 1x -timeout 60m ./bench/'

.PHONY: bench-podgroups
bench-podgroups: build testbed-bins $(TESTBEDCTL) ## podgroups against a bare client; update while suspended; prints a table
	TESTBED_APISERVER_GOGC=400 hack/with-testbed.sh bash -c 'cd e2e && GOWORK=off go test -run "^$$" -bench PodGroups -benchtime 1x -timeout 30m ./bench/'

# Not part of make test nor make bench: the four add-ons together at scale (see e2e/bench/scale_test.go
# for its parameters; SCALE_JOBSETS=50 SCALE_BIG_JOBS=10 runs it small), on a testbed of SCALE_NODES
# fake nodes (110 pods each) started for the run.
SCALE_NODES ?= 20
.PHONY: bench-scale
bench-scale: build testbed-bins $(TESTBEDCTL) ## The four add-ons together: 1,000 mixed JobSets, one 10,000-pod JobSet, API requests per JobSet; prints tables
	BENCH_SCALE=1 TESTBED_NODES=$(SCALE_NODES) hack/with-testbed.sh bash -c 'cd e2e && GOWORK=off go test -run "^$$" -bench "^BenchmarkScale$$" -benchtime 1x -timeout 180m ./bench/'

# make test runs it on its shared testbed (hack/test.sh): thresholds and their noise in
# e2e/bench/smoke_test.go and docs/scale.md (bench-smoke).
.PHONY: bench-smoke
bench-smoke: build testbed-bins $(TESTBEDCTL) ## Reduced headline benchmarks of the four add-ons; fails when a ratio against its same-run baseline falls below its threshold
	hack/with-testbed.sh bash -c 'cd e2e && GOWORK=off go test -count=1 -run "^$$" -bench "^BenchmarkSmoke$$" -benchtime 1x -timeout 20m ./bench/'

# Not part of make test nor make bench: what distinct large templates leave in each webhook.
.PHONY: bench-dryrun-memory
bench-dryrun-memory: build testbed-bins $(TESTBEDCTL) ## Each add-on's webhook RSS before, at peak and after BENCH_DRYRUN_JOBSETS (5,000) distinct ~200 KB JobSets sent as server-side dry runs; prints a table
	hack/with-testbed.sh bash -c 'cd e2e && GOWORK=off go test -count=1 -run "^$$" -bench "^BenchmarkDryRunMemory$$" -benchtime 1x -timeout 120m ./bench/'

.PHONY: bench-resourceclaims
bench-resourceclaims: build testbed-bins $(TESTBEDCTL) ## resourceclaims against a bare client; Job webhook latency; prints a table
	cd controllers/resourceclaims && GOWORK=off go test -run '^$$' -bench '^BenchmarkJobWebhook$$' -benchmem ./internal/webhook/
	TESTBED_APISERVER_GOGC=400 hack/with-testbed.sh bash -c 'cd e2e && GOWORK=off go test -run "^$$" -bench ResourceClaims -benchtime 1x -timeout 30m ./bench/'

.PHONY: testbed-up
testbed-up: testbed-bins $(TESTBEDCTL) ## Start the local testbed and print its KUBECONFIG
	$(TESTBEDCTL) up

.PHONY: testbed-down
testbed-down: $(TESTBEDCTL) ## Stop the testbed; no process or port is left
	$(TESTBEDCTL) down

.PHONY: demo
demo: build testbed-bins $(TESTBEDCTL) $(if $(filter kind,$(DEMO_CLUSTER)),kind-up-deps) ## Start the testbed (DEMO_CLUSTER=kind: a kind cluster), run the controllers, apply examples/, show what happened
	$(if $(filter kind,$(DEMO_CLUSTER)),$(KIND_ENV)) hack/demo.sh

.PHONY: demo-down
demo-down: $(TESTBEDCTL) ## Stop what make demo started: the testbed and every controller on it (DEMO_CLUSTER=kind: delete the kind cluster)
	$(if $(filter kind,$(DEMO_CLUSTER)),$(KIND_ENV) $(TESTBEDCTL) kind-down,$(TESTBEDCTL) down)

.PHONY: chart-verify
chart-verify: testbed-bins $(TESTBEDCTL) $(HELM_DIR)/helm $(PROMETHEUS_CRDS)/.stamp ## helm lint, render every toggle combination (controllers, cert modes, monitoring), server-side dry-run on the testbed
	hack/with-testbed.sh env HELM=$(HELM_DIR)/helm KUBECTL=$(TESTBED)/kubectl PROMETHEUS_CRDS=$(PROMETHEUS_CRDS) hack/chart-verify.sh

