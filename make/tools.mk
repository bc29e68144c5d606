# How every tool is built: each from its wrapper module tools/<tool> (make/versions.mk names the
# versions) into bin/<name>-<version>/, by hack/build-tool.sh; and bin/testbed, the one
# directory the testbed, envtest and kwokctl look in.
ETCD_DIR   := $(BIN)/etcd-$(ETCD_VERSION)
KWOK_DIR   := $(BIN)/kwok-$(KWOK_VERSION)
HELM_DIR   := $(BIN)/helm-$(HELM_VERSION)
VOLCANO_DIR      := $(BIN)/volcano-$(VOLCANO_VERSION)
VOLCANO_CM_DIR   := $(BIN)/volcano-controller-manager-$(VOLCANO_VERSION)
VOLCANO_CM       := $(VOLCANO_CM_DIR)/vc-controller-manager
SCHEDPLUGINS_DIR := $(BIN)/scheduler-plugins-$(SCHEDPLUGINS_VERSION)
GOVULNCHECK      := $(BIN)/govulncheck-$(VULN_VERSION)/govulncheck
KIND             := $(BIN)/kind-$(KIND_VERSION)/kind
KO               := $(BIN)/ko-$(KO_VERSION)/ko
CONTAINERD_DIR   := $(BIN)/containerd-$(CONTAINERD_VERSION)
KUEUE_DIR        := $(BIN)/kueue-$(KUEUE_VERSION)

kube_ldflags = $(foreach p,k8s.io/component-base/version k8s.io/client-go/pkg/version,\
	-X $(p).gitVersion=$1 -X $(p).gitMajor=$(word 1,$(subst ., ,$(patsubst v%,%,$1))) \
	-X $(p).gitMinor=$(word 2,$(subst ., ,$1)) -X $(p).gitTreeState=clean -X $(p).buildDate=1970-01-01T00:00:00Z)

KUBE_BINS := kube-apiserver kube-controller-manager kube-scheduler kubectl
# testbed_core_bins KUBE,JOBSET: every binary a testbed of those versions runs, the longest
# builds first (a parallel make, TOOL_JOBS, starts them first); GANG_BINS: the gang schedulers
# beside it (testbedctl gang) and Volcano's controller-manager, whose queue controller opens
# Volcano's queues for its scheduler, built by testbed-bins, not by make demo before it starts.
testbed_core_bins = $(addprefix $(BIN)/kube-$1/,$(KUBE_BINS)) $(BIN)/jobset-$2/jobset $(HELM_DIR)/helm \
	$(KWOK_DIR)/kwok $(KWOK_DIR)/kwokctl $(ETCD_DIR)/etcd
GANG_BINS := $(SCHEDPLUGINS_DIR)/sp-scheduler $(VOLCANO_DIR)/vc-scheduler $(VOLCANO_CM)
testbed_bins = $(call testbed_core_bins,$1,$2) $(GANG_BINS)
TESTBED_BINS := $(call testbed_bins,$(KUBE_VERSION),$(JOBSET_VERSION))

# One go build per group: the testbed's four (kube-apiserver, kube-controller-manager,
# kube-scheduler and kubectl share most of their packages), and the three more of a kind node.
KUBE_NODE_BINS := kubelet kubeadm kube-proxy
define kube_rule
$(addprefix $(BIN)/kube-$1/,$(KUBE_BINS)) &: $(call kube_mod,$1)/go.mod
	$(call kube_toolchain,$1)hack/build-tool.sh $(call kube_mod,$1) $(BIN)/kube-$1/ "$(addprefix k8s.io/kubernetes/cmd/,$(KUBE_BINS))" "$(call kube_ldflags,$1)"
$(addprefix $(BIN)/kube-$1/,$(KUBE_NODE_BINS)) &: $(call kube_mod,$1)/go.mod
	$(call kube_toolchain,$1)hack/build-tool.sh $(call kube_mod,$1) $(BIN)/kube-$1/ "$(addprefix k8s.io/kubernetes/cmd/,$(KUBE_NODE_BINS))" "$(call kube_ldflags,$1)"
endef
# JobSet, kwok, helm and JobSet's e2e suite wait for our binaries (an order-only prerequisite):
# their wrapper modules pin go.work's versions of the Kubernetes client packages and below
# (SHARED_DEPS_TOOLS in make/build.mk), so they reuse what our build compiled rather than
# compiling the same packages at the same time.
define jobset_rule
$(BIN)/jobset-$1/jobset: $(call jobset_mod,$1)/go.mod | build
	hack/build-tool.sh $(call jobset_mod,$1) $$@ sigs.k8s.io/jobset \
		"-X sigs.k8s.io/jobset/pkg/version.GitVersion=$1"
endef
$(foreach v,$(COMPAT_KUBE_VERSIONS),$(eval $(call kube_rule,$v)))
$(foreach v,$(COMPAT_JOBSET_VERSIONS),$(eval $(call jobset_rule,$v)))
$(ETCD_DIR)/etcd: tools/etcd/go.mod
	hack/build-tool.sh tools/etcd $@ go.etcd.io/etcd/server/v3 \
		"-X go.etcd.io/etcd/api/v3/version.GitSHA=$(ETCD_VERSION)"
$(KWOK_DIR)/kwok $(KWOK_DIR)/kwokctl &: tools/kwok/go.mod | build
	hack/build-tool.sh tools/kwok $(KWOK_DIR)/ "sigs.k8s.io/kwok/cmd/kwok sigs.k8s.io/kwok/cmd/kwokctl" \
		"-X sigs.k8s.io/kwok/pkg/consts.Version=$(patsubst v%,%,$(KWOK_VERSION))"
$(HELM_DIR)/helm: tools/helm/go.mod | build
	hack/build-tool.sh tools/helm $@ helm.sh/helm/v4/cmd/helm
# The two gang schedulers podgroups drives, each run on the testbed as a second scheduler.
$(VOLCANO_DIR)/vc-scheduler: tools/volcano/go.mod
	hack/build-tool.sh tools/volcano $@ volcano.sh/volcano/cmd/scheduler
# Volcano's controller-manager, from the same wrapper module: the testbed runs its queue
# controller beside the scheduler (testbed.StartGangSchedulers), the peer benchmark (make bench
# ADDON=peers) its vcjob controller, which makes a PodGroup per vcjob. The vcjob CRDs are among
# volcano-crds already.
$(VOLCANO_CM): tools/volcano/go.mod
	hack/build-tool.sh tools/volcano $@ volcano.sh/volcano/cmd/controller-manager
$(SCHEDPLUGINS_DIR)/sp-scheduler: $(call schedplugins_mod,$(SCHEDPLUGINS_VERSION))/go.mod
	hack/build-tool.sh $(call schedplugins_mod,$(SCHEDPLUGINS_VERSION)) $@ sigs.k8s.io/scheduler-plugins/cmd/scheduler

# KAI Scheduler, the fourth gang scheduler podgroups drives (scheduler: kai): its scheduler, its
# binder (the scheduler writes BindRequests, the binder binds) and its pod grouper, one go build
# from tools/kai, on the Kubernetes 1.34 its module names. Run by testbed.StartKAI (make e2e
# SUITE=kai) only, so built by kai-bins, not by testbed-bins.
KAI_DIR  := $(BIN)/kai-$(KAI_VERSION)
KAI_CMDS := scheduler binder podgrouper
KAI_BINS := $(addprefix $(KAI_DIR)/,$(KAI_CMDS))
$(KAI_BINS) &: tools/kai/go.mod
	hack/build-tool.sh tools/kai $(KAI_DIR)/ "$(addprefix github.com/NVIDIA/KAI-scheduler/cmd/,$(KAI_CMDS))"

# Kueue, run beside JobSet by the neighbour suites (make e2e SUITE=kueue): its own wrapper module,
# on its own Kubernetes and JobSet versions (v0.19.2: k8s.io/api v0.36, JobSet v0.12.0; v0.17.0:
# k8s.io/api v0.35, JobSet v0.11.1), a separate binary.
$(KUEUE_DIR)/kueue: $(call kueue_mod,$(KUEUE_VERSION))/go.mod
	hack/build-tool.sh $(call kueue_mod,$(KUEUE_VERSION)) $@ sigs.k8s.io/kueue/cmd/kueue \
		"-X sigs.k8s.io/kueue/pkg/version.GitVersion=$(KUEUE_VERSION) -X sigs.k8s.io/kueue/pkg/version.BuildDate=1970-01-01"

# Upstream JobSet's own e2e suite (test/e2e of its module), a test binary built from
# tools/jobset-e2e, which pins the same JobSet as tools/jobset (make e2e SUITE=upstream).
JOBSET_E2E := $(BIN)/jobset-e2e-$(JOBSET_VERSION)/e2e.test
$(JOBSET_E2E): tools/jobset-e2e/go.mod | build
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
$(PROMETHEUS_DIR)/prometheus $(PROMETHEUS_DIR)/promtool &: tools/prometheus/go.mod
	GOFLAGS="$$GOFLAGS -tags=remove_all_sd" hack/build-tool.sh tools/prometheus $(PROMETHEUS_DIR)/ \
		"github.com/prometheus/prometheus/cmd/prometheus github.com/prometheus/prometheus/cmd/promtool" "$(PROMETHEUS_LDFLAGS)"
# The Prometheus Operator's ServiceMonitor and PrometheusRule CRDs, from its module (make
# chart-verify applies them to the testbed to dry-run the chart's monitoring objects).
PROMETHEUS_CRDS := $(BIN)/prometheus-operator-crds-$(PROMETHEUS_OPERATOR_VERSION)
$(PROMETHEUS_CRDS)/.stamp:
	src=$$(GOWORK=off go mod download -json github.com/prometheus-operator/prometheus-operator@$(PROMETHEUS_OPERATOR_VERSION) | sed -n 's/^	"Dir": "\(.*\)",$$/\1/p') && \
		rm -rf $(PROMETHEUS_CRDS) && mkdir -p $(PROMETHEUS_CRDS) && \
		cp $$src/example/prometheus-operator-crd/monitoring.coreos.com_servicemonitors.yaml $$src/example/prometheus-operator-crd/monitoring.coreos.com_prometheusrules.yaml $(PROMETHEUS_CRDS)/ && \
		chmod u+w $(PROMETHEUS_CRDS)/*.yaml
	touch $@
.PHONY: prometheus-bins
prometheus-bins: $(PROMETHEUS_DIR)/prometheus $(PROMETHEUS_DIR)/promtool ## tools: Build (once) Prometheus and promtool

$(GOVULNCHECK): tools/vuln/go.mod
	hack/build-tool.sh tools/vuln $@ golang.org/x/vuln/cmd/govulncheck
$(KIND): tools/kind/go.mod
	hack/build-tool.sh tools/kind $@ sigs.k8s.io/kind
$(KO): tools/ko/go.mod
	hack/build-tool.sh tools/ko $@ github.com/google/ko
# The kind node image (make kind-image): containerd, the node's Kubernetes binaries and pause.
CONTAINERD_BINS := containerd containerd-shim-runc-v2 ctr
$(addprefix $(CONTAINERD_DIR)/,$(CONTAINERD_BINS)) &: tools/containerd/go.mod
	hack/build-tool.sh tools/containerd $(CONTAINERD_DIR)/ "$(addprefix github.com/containerd/containerd/v2/cmd/,$(CONTAINERD_BINS))" \
		"-X github.com/containerd/containerd/v2/version.Version=$(CONTAINERD_VERSION)"
$(CONTAINERD_DIR)/crictl: tools/crictl/go.mod
	hack/build-tool.sh tools/crictl $@ sigs.k8s.io/cri-tools/cmd/crictl \
		"-X sigs.k8s.io/cri-tools/pkg/version.Version=$(CRICTL_VERSION)"
KIND_NODE_BINS := $(addprefix $(BIN)/kube-$(KUBE_VERSION)/,$(KUBE_BINS) $(KUBE_NODE_BINS)) \
	$(addprefix $(CONTAINERD_DIR)/,$(CONTAINERD_BINS) crictl) $(ETCD_DIR)/etcd $(BIN)/pause
$(BIN)/pause: e2e/kindbed/images/pause/main.go
	cd e2e && GOWORK=off CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o $@ ./kindbed/images/pause

# bin/testbed is the one directory the testbed, envtest (KUBEBUILDER_ASSETS) and kwokctl's
# PATH look in: links to the versioned binaries above, and JobSet's manifests.
# bin/testbed-<kube>-<jobset> is the same for other versions (TESTBED_BIN_DIR, make e2e SUITE=compat),
# bin/testbed-<kube> for a KUBE_VERSION other than KUBE_DEFAULT (make exports it as
# TESTBED_BIN_DIR, which the testbed, testbedctl and the suites read).
TESTBED := $(BIN)/testbed$(if $(filter-out $(KUBE_DEFAULT),$(KUBE_VERSION)),-$(KUBE_VERSION))
ifneq ($(KUBE_VERSION),$(KUBE_DEFAULT))
export TESTBED_BIN_DIR := $(TESTBED)
endif
mod_dir = $(shell cd $1 && GOWORK=off go list -m -f '{{.Dir}}' $2)
VOLCANO_SRC = $(call mod_dir,tools/volcano,volcano.sh/volcano)
SCHEDPLUGINS_SRC = $(call mod_dir,$(call schedplugins_mod,$(SCHEDPLUGINS_VERSION)),sigs.k8s.io/scheduler-plugins)
# link_testbed DIR,KUBE,JOBSET: the recipe that fills DIR with a testbed's binaries;
# link_gang DIR: the one that adds the gang schedulers.
link_testbed = hack/link-testbed.sh core $1 $3 $(call mod_dir,$(call jobset_mod,$3),sigs.k8s.io/jobset) \
	$(call testbed_core_bins,$2,$3)
link_gang = hack/link-testbed.sh gang $1 $(VOLCANO_SRC) $(SCHEDPLUGINS_SRC) $(GANG_BINS)
TESTBED_CORE_STAMP := $(TESTBED)/.stamp-$(KUBE_VERSION)-$(ETCD_VERSION)-$(KWOK_VERSION)-$(JOBSET_VERSION)-$(HELM_VERSION)
TESTBED_STAMP := $(TESTBED)/.stamp-gang-$(VOLCANO_VERSION)-$(SCHEDPLUGINS_VERSION)

$(TESTBED_CORE_STAMP): $(call testbed_core_bins,$(KUBE_VERSION),$(JOBSET_VERSION))
	$(call link_testbed,$(TESTBED),$(KUBE_VERSION),$(JOBSET_VERSION))
	touch $@
$(TESTBED_STAMP): $(TESTBED_CORE_STAMP) $(GANG_BINS)
	rm -f $(TESTBED)/.stamp-gang-*
	$(call link_gang,$(TESTBED))
	touch $@

COMPAT_STAMP = .stamp-$(ETCD_VERSION)-$(KWOK_VERSION)-$(HELM_VERSION)-$(VOLCANO_VERSION)-$(SCHEDPLUGINS_VERSION)
COMPAT_STAMPS := $(foreach c,$(COMPAT_COMBOS),$(BIN)/testbed-$c/$(COMPAT_STAMP))
.SECONDEXPANSION:
$(COMPAT_STAMPS): $(BIN)/testbed-%/$(COMPAT_STAMP): $$(call testbed_bins,$$(call kube_of,$$*),$$(call jobset_of,$$*))
	$(call link_testbed,$(BIN)/testbed-$*,$(call kube_of,$*),$(call jobset_of,$*))
	$(call link_gang,$(BIN)/testbed-$*)
	touch $@

.PHONY: testbed-bins testbed-core-bins
testbed-bins: $(TESTBED_STAMP) ## tools: Build (once) every binary the testbed runs, the gang schedulers included
testbed-core-bins: $(TESTBED_CORE_STAMP) ## tools: Build (once) what a testbed runs, without the gang schedulers (make demo)

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
kueue-bins: $(KUEUE_STAMP) ## tools: Build (once) Kueue and link it into bin/testbed

# KAI in bin/testbed beside the rest: its scheduler, binder and pod grouper (kai-scheduler,
# kai-binder, kai-podgrouper) and
# kai-src, the directory of its module source, from which testbed.StartKAI takes KAI's CRDs.
KAI_STAMP := $(TESTBED)/.stamp-kai-$(KAI_VERSION)
$(KAI_STAMP): $(KAI_BINS)
	@mkdir -p $(TESTBED)
	rm -f $(TESTBED)/.stamp-kai-*
	ln -sf $(KAI_DIR)/scheduler $(TESTBED)/kai-scheduler
	ln -sf $(KAI_DIR)/binder $(TESTBED)/kai-binder
	ln -sf $(KAI_DIR)/podgrouper $(TESTBED)/kai-podgrouper
	echo $(call mod_dir,tools/kai,github.com/NVIDIA/KAI-scheduler) >$(TESTBED)/kai-src
	echo $(KAI_VERSION) >$(TESTBED)/kai-version
	touch $@
.PHONY: kai-bins
kai-bins: $(KAI_STAMP) ## tools: Build (once) KAI Scheduler's scheduler, binder and pod grouper and link them into bin/testbed

# Trainer named in bin/testbed: trainer-version, the version testbed.StartTrainer runs (from
# bin/trainer-<version>).
TRAINER_STAMP := $(TESTBED)/.stamp-trainer-$(TRAINER_VERSION)
$(TRAINER_STAMP): $(TESTBED_STAMP) $(TRAINER_DIR)/.stamp
	rm -f $(TESTBED)/.stamp-trainer-*
	echo $(TRAINER_VERSION) >$(TESTBED)/trainer-version
	touch $@
.PHONY: trainer-bins
trainer-bins: $(TRAINER_STAMP) ## tools: Build (once) Kubeflow Trainer, its CRDs and webhooks into bin/

# testbedctl (e2e/cmd/testbed): starts and stops the testbed by hand.
TESTBEDCTL := $(BIN)/testbedctl
$(TESTBEDCTL): FORCE
	cd e2e && GOWORK=off go build -o $@ ./cmd/testbed

.PHONY: tools
tools: testbed-bins kueue-bins trainer-bins prometheus-bins $(JOBSET_E2E) $(TESTBEDCTL) $(HELM_DIR)/helm ## tools: Build every tool the tests use (cached in bin/ by version)
