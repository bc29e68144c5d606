# The kind path (docs/kind.md): a kind cluster of real containers, its node image built here
# offline, images loaded into it after it is up, the chart installed. make test runs the kind
# suite where a Docker engine answers.
KIND_MOD = $(call mod_dir,tools/kind,sigs.k8s.io/kind)
KIND_ENV = KIND=$(KIND) HELM=$(HELM_DIR)/helm KUBECTL=$(TESTBED)/kubectl KO=$(KO) \
	JOBSET_SRC=$(call mod_dir,tools/jobset,sigs.k8s.io/jobset) SCHEDPLUGINS_SRC=$(SCHEDPLUGINS_SRC) \
	TRAINER_SRC=$(call mod_dir,$(call trainer_mod,$(TRAINER_NEWEST)),github.com/kubeflow/trainer/v2)

.PHONY: kind-image
kind-image: $(KIND_NODE_BINS) ## tools: The kind node image, built offline, cached by content (Docker, debootstrap)
	@mkdir -p $(BIN)/kind
	hack/kind/node-image.sh $(KIND_MOD) $(BIN)/kube-$(KUBE_VERSION) $(CONTAINERD_DIR) $(ETCD_DIR)/etcd $(BIN)/pause >$(BIN)/kind/node-image.tmp
	mv $(BIN)/kind/node-image.tmp $(BIN)/kind/node-image

.PHONY: kind-images
kind-images: $(KO) ## tools: Every image a kind cluster loads, into the Docker engine
	hack/kind/images.sh $(KO) $$(hack/kind/rootfs.sh)

# The kind suite's full cases, which make test leaves out (KIND_REDUCED=1): the rest of the
# distributed-start stories (jobset #971); make test keeps TestRendezvousAcrossNodes (a
# rendezvous across nodes through JobSet DNS names) and TestStartBarrierLinesUpStarts (the start
# barrier on real pods, some 35 s); and TestNodeLostOnRealNodes, which stops a worker's container
# (some 3 minutes, and the cluster is one node short until it is back); and TestTrainJobOnRealNodes,
# which installs Kubeflow Trainer (over 2 minutes: its controller manager waits for the webhook
# certificate it makes to reach its pod's Secret volume).
KIND_FULL_TESTS := TestRendezvousTimeoutRestarts|TestStartBarrierStages|TestStartBarrierTimeout|TestNodeLostOnRealNodes|TestTrainJobOnRealNodes
.PHONY: e2e-kind
e2e-kind: ## test: The kind suite: real containers, the chart installed (KIND_REDUCED=1: as CI)
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
bench-kind: kind-up-deps ## bench: Real-node figures on kind: all four add-ons against a plain JobSet
	cd e2e && $(KIND_ENV) GOWORK=off go test -count=1 -run '^$$' -bench RealNodes -benchtime 1x -timeout 30m ./bench/kind/

.PHONY: kind-up-deps
kind-up-deps: testbed-bins $(KIND) $(KO) $(HELM_DIR)/helm $(if $(KIND_NODE_IMAGE),,kind-image) kind-images

