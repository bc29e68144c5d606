# The tests: make test (before every push) and make test-all (everything CI runs), both
# hack/test.sh; unit, fuzz, the chart's checks, and make e2e, every e2e suite of e2e/ on the
# testbed (the kind suite: make/kind.mk).
GO_TEST_FLAGS ?= -count=1
export KUBEBUILDER_ASSETS := $(TESTBED)
# Where the observability suite finds prometheus and promtool.
export PROMETHEUS_BIN_DIR := $(PROMETHEUS_DIR)

.PHONY: test test-all
test: ## test: Before every push: verify, unit and integration, the four add-ons' e2e suites (reduced)
	hack/test.sh
test-all: ## test: Everything CI runs: make test, then every other suite, upstream's e2e, charts, bench-smoke, kind
	hack/test.sh all

# What make test runs of the e2e suites (make e2e-quick): of the four add-ons' suites and the
# testbed's own (the tutorial, the four together), the cases in QUICK_TESTS: each add-on's user
# stories, its admission refusals, the data-safety and ownership cases that take seconds, one
# case each of restart, staging, the barrier and all-or-nothing placement. About 5 minutes; the
# rest of those suites (the node-loss grace periods, expiry, the name races, the kills) runs in
# make test-all, after them (E2E_EXCLUDE_QUICK). A name runs in every quick suite that has it.
QUICK_SUITES := volumeclaims resourceclaims sequencer podgroups testbed
QUICK_TESTS := TestStories TestBadInputRefused TestAdmission TestPoliciesImmutable \
	TestTemplatesImmutable TestAnnotationsImmutable TestPlainJobSetNeverReachesWebhooks \
	TestSmallerRerunLeavesOthers TestPodBeforeItsPVC TestUserClaimNeverDeleted TestRestartKeepsClaims \
	TestNodeOutOfServiceRecreate TestKEP762Example TestPodsOfAJobShareItsClaim TestJobBeforeItsClaim \
	TestRestart TestKEP672Story TestThreeStageChain TestStartBarrier TestStartBarrierStages \
	TestStartBarrierRefused TestForgedGatedPodNotReleased TestGang TestGangNameTaken TestStages \
	TestVolcanoTaskMinimums TestControllerBinaries TestManagedElsewhere TestJobSetCompletes \
	TestVolumeBinds TestResourceClaimAllocated TestJobDeletionCollectsPods TestTutorial
space := $(subst ,, )
quick_tests = $(subst $(space),|,$(strip $(QUICK_TESTS)))

# make e2e: the suites of e2e/suites (e2e/README.md) on the testbed, on the one of KUBECONFIG
# when it is set, else each on one it starts for the run.
#
# Without SUITE: every suite but kind and multicluster, one after another, reduced (what CI
# runs): go test -skip leaves out the longer cases below (not run, not reported; test names no
# other suite uses), which a named suite runs.
#
# SUITE=NAME[,NAME...]: each named suite in full, in that order; a NAME is a directory of
# e2e/suites, or one of
#   gate-off  the cases of a Kubernetes with a feature gate off, each on a testbed of its own
#             (DRAWorkloadResourceClaims off: a Job of 300 pods sharing a claim is refused)
#   upstream  upstream JobSet's own e2e suite on the testbed twice, with the four add-ons
#             running and without: the same specs must pass
#   upgrade   (e2e/suites/upgrade) a testbed of KUBE_DEFAULT whose control plane is replaced by
#             KUBE_NEXT's while a composite gang runs; builds KUBE_NEXT's Kubernetes (Go 1.27)
#             once. Not in the reduced run
#   compat    the compatibility matrix: core cases of each add-on on every COMPAT_COMBOS
#             (<kube>-<jobset>), each on a fresh testbed; writes docs/compatibility.md. It
#             builds another Kubernetes and two more JobSets (about 20 minutes, once)
SUITE ?=

# The neighbour suites, beside real Kueue and Kubeflow Trainer (testbed.StartKueue, StartTrainer).
NEIGHBOUR_FULL_TESTS := TestPreemption|TestTopologyAwareScheduling|TestGangs|TestCoschedulingClaims|TestWaitForPodsReady
# JobSet's alpha gates (e2e/suites/gates): the reduced run keeps one case per gate (TestElastic,
# TestInPlaceRestart, TestRestartJob).
JOBSET_GATES_FULL_TESTS := TestElasticBackends|TestElasticRetention|TestRestartJobRetainedClaim
# Observability: a real Prometheus scrapes the four add-ons, evaluates the chart's dashboard
# queries and alerts; the full run makes the alerts fire.
OBSERVABILITY_FULL_TESTS := TestAlertsFireOnWorkload
# Cases that need a Kubernetes with a gate off: only SUITE=gate-off runs them, on a testbed of
# their own started with TESTBED_KUBE_FEATURE_GATES.
GATE_OFF_TESTS := TestClaimOnPodGroupGateOff
GATES_WITHOUT_DRA_WORKLOAD_CLAIMS := GenericWorkload=true,TopologyAwareWorkloadScheduling=true,CompositePodGroup=true
# Multicluster (Kueue's MultiKueue on testbeds of the suite's own: a manager, a worker
# TESTBED_PORT_BASE+1000 and, for MULTICLUSTER_FULL_TESTS, a second worker +400): not in the
# reduced run (it needs no testbed of KUBECONFIG's); make test runs it once its testbed is down
# with MULTICLUSTER_REDUCED=1 (TestDispatched, about a minute; all: about 3).
MULTICLUSTER_FULL_TESTS := TestRedispatch
# Chaos (e2e/suites/chaos: two replicas per add-on, SIGKILLs, leader failover, a webhook
# outage): the reduced run uses the suite's own small numbers, SUITE=chaos these.
CHAOS_JOBSETS ?= 200
CHAOS_KILLS ?= 20
CHAOS_OUTAGE_SECONDS ?= 60

e2e_test = cd e2e && GOWORK=off go test $(GO_TEST_FLAGS)
summary = 2>&1 | $(ROOT)/hack/test-summary.sh

# What each SUITE needs built (beyond build; testbed-bins unless named here) and runs (a suite
# not named here: go test of its directory, 30 minutes at most; resourceclaims without
# GATE_OFF_TESTS).
e2e_needs.kueue         := testbed-bins kueue-bins
e2e_needs.trainer       := testbed-bins trainer-bins
e2e_needs.observability := testbed-bins prometheus-bins
e2e_needs.multicluster  := testbed-bins kueue-bins
e2e_needs.chaos         := testbed-bins $(TESTBEDCTL)
e2e_needs.upstream      := testbed-bins $(JOBSET_E2E)
e2e_needs.compat        := $(COMPAT_STAMPS)
e2e_needs.kind          :=
e2e_needs.kai           := testbed-bins kai-bins
e2e_run.gates         = $(e2e_test) -timeout 15m -v ./suites/gates/ $(summary)
e2e_run.observability = $(e2e_test) -timeout 15m -v ./suites/observability/ $(summary)
e2e_run.gate-off      = cd e2e && env -u KUBECONFIG TESTBED_KUBE_FEATURE_GATES=$(GATES_WITHOUT_DRA_WORKLOAD_CLAIMS) GOWORK=off go test $(GO_TEST_FLAGS) -timeout 10m -v -run '^($(GATE_OFF_TESTS))$$' ./suites/resourceclaims/ $(summary)
e2e_run.multicluster  = cd e2e && env -u KUBECONFIG GOWORK=off go test $(GO_TEST_FLAGS) -timeout 20m -v $(if $(MULTICLUSTER_REDUCED),-skip '^($(MULTICLUSTER_FULL_TESTS))$$') ./suites/multicluster/ $(summary)
e2e_run.chaos         = hack/with-testbed.sh bash -c 'cd e2e && CHAOS_JOBSETS=$(CHAOS_JOBSETS) CHAOS_KILLS=$(CHAOS_KILLS) CHAOS_OUTAGE_SECONDS=$(CHAOS_OUTAGE_SECONDS) \
	GOWORK=off go test -count=1 -v -timeout 60m ./suites/chaos/ $(summary)'
e2e_run.upstream      = hack/with-testbed.sh bash -c 'cd e2e && GOWORK=off go run ./cmd/upstream -suite $(JOBSET_E2E)'
e2e_run.compat        = cd e2e && GOWORK=off go run ./cmd/compat -out $(ROOT)/docs/compatibility.md \
	-command "$(if $(TESTBED_PORT_BASE),TESTBED_PORT_BASE=$(TESTBED_PORT_BASE) )make e2e SUITE=compat" $(COMPAT_COMBOS)
e2e_run.kind          = $(MAKE) --no-print-directory e2e-kind
# upgrade: a testbed of KUBE_DEFAULT whose control plane the test replaces by KUBE_NEXT's.
e2e_run.upgrade       = $(MAKE) --no-print-directory KUBE_VERSION=$(KUBE_NEXT) testbed-core-bins && \
	cd e2e && env -u KUBECONFIG TESTBED_UPGRADE_BIN_DIR=$(BIN)/testbed-$(KUBE_NEXT) GOWORK=off go test $(GO_TEST_FLAGS) -timeout 15m -v ./suites/upgrade/ $(summary)
# Without SUITE; E2E_EXCLUDE_QUICK=1 (make test-all, after make e2e-quick): without what make
# e2e-quick ran (QUICK_TESTS of QUICK_SUITES; the same names in other suites do run).
# Neither runs kai (KAI Scheduler's build is its own: make e2e SUITE=kai) nor upgrade (make e2e SUITE=upgrade).
E2E_EXCLUDE_QUICK ?=
reduced_skipped = $(NEIGHBOUR_FULL_TESTS)|$(GATE_OFF_TESTS)|$(JOBSET_GATES_FULL_TESTS)|$(OBSERVABILITY_FULL_TESTS)
e2e_reduced_skip = -skip '^($(reduced_skipped))$$'
e2e_other_suites = $$(GOWORK=off go list ./suites/... | grep -v -e /suites/kind -e /suites/multicluster -e /suites/kai -e /suites/upgrade \
	$(foreach s,$(QUICK_SUITES),-e /suites/$s$$))
e2e_run_reduced = $(if $(E2E_EXCLUDE_QUICK),\
	($(e2e_test) -p 1 -timeout 30m -v -skip '^($(reduced_skipped)|$(quick_tests))$$' $(foreach s,$(QUICK_SUITES),./suites/$s/) $(summary)) && \
	($(e2e_test) -p 1 -timeout 30m -v $(e2e_reduced_skip) $(e2e_other_suites) $(summary)),\
	$(e2e_test) -p 1 -timeout 30m -v $(e2e_reduced_skip) $(foreach s,$(QUICK_SUITES),./suites/$s/) $(e2e_other_suites) $(summary))

comma := ,
SUITES := $(subst $(comma), ,$(SUITE))
E2E_SUITES := $(patsubst e2e/suites/%/,%,$(wildcard e2e/suites/*/)) gate-off upstream compat
$(foreach s,$(filter-out $(E2E_SUITES),$(SUITES)),$(error SUITE=$s: no such suite (one of: $(E2E_SUITES))))
defined = $(filter-out undefined,$(origin $1))
e2e_needs = $(if $(call defined,e2e_needs.$1),$(e2e_needs.$1),testbed-bins)
e2e_run = $(if $(call defined,e2e_run.$1),$(e2e_run.$1),$(e2e_test) -timeout 30m -v $(if $(filter resourceclaims,$1),-skip '^($(GATE_OFF_TESTS))$$' )./suites/$1/ $(summary))
define nl


endef

.PHONY: e2e
e2e: $(if $(SUITES),$(foreach s,$(SUITES),$(call e2e_needs,$s)),testbed-bins kueue-bins trainer-bins prometheus-bins) build ## test: The e2e suites on the testbed, reduced; SUITE=name,...: those in full
	$(if $(SUITES),$(foreach s,$(SUITES),$(call e2e_run,$s)$(nl)),$(e2e_run_reduced))

.PHONY: e2e-quick
e2e-quick: testbed-bins build ## test: What make test runs of the e2e suites: QUICK_TESTS of QUICK_SUITES
	$(e2e_test) -p 1 -timeout 20m -v -run '^($(quick_tests))$$' $(foreach s,$(QUICK_SUITES),./suites/$s/) $(summary)

.PHONY: unit
unit: testbed-bins ## test: Unit and integration tests of every module
	@for m in $(filter-out e2e,$(MODULES)) charts/jobset-addons/tests hack/release; do (cd $$m && GOWORK=off go test $(GO_TEST_FLAGS) ./...) || exit 1; done
	@# The e2e module's own unit tests (kind's images and JobSet's gates there, the compat table,
	@# the testbed's metrics parsing, the knobs table of e2e/README.md against the code): the rest
	@# of it needs a cluster (make e2e).
	cd e2e && GOWORK=off go test $(GO_TEST_FLAGS) ./kindbed/... ./cmd/... ./testbed/ ./repo/

.PHONY: fuzz
fuzz: ## test: Every fuzz target (contract parsers, webhooks' decoding) for FUZZTIME each
	FUZZTIME=$(FUZZTIME) hack/fuzz.sh
FUZZTIME ?= 5m

.PHONY: chart-verify
chart-verify: testbed-bins $(TESTBEDCTL) $(HELM_DIR)/helm $(PROMETHEUS_CRDS)/.stamp $(PROMETHEUS_DIR)/promtool ## test: helm lint, render every toggle combination, server-side dry-run on the testbed; promtool on the alerts
	$(PROMETHEUS_DIR)/promtool check rules charts/jobset-addons/files/alerts.yaml
	$(PROMETHEUS_DIR)/promtool test rules charts/jobset-addons/tests/promtool/alerts_test.yaml
	hack/with-testbed.sh env HELM=$(HELM_DIR)/helm KUBECTL=$(TESTBED)/kubectl PROMETHEUS_CRDS=$(PROMETHEUS_CRDS) hack/chart-verify.sh
