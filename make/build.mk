# Our own code: the modules, the binaries, and the checks that need no cluster (make verify).
CONTROLLERS := volumeclaims resourceclaims sequencer podgroups
# Our modules (go.work) and the wrapper modules that pin the testbed's tools (not in go.work:
# they pin other Kubernetes versions). KUBE_NEXT's (Go 1.27) only with KUBE_VERSION=$(KUBE_NEXT):
# nothing of it in make test.
MODULES := pkg/contract pkg/addon $(addprefix controllers/,$(CONTROLLERS)) cmd/kubectl-jobset-addons e2e
TOOL_MODULES := tools/kube tools/etcd tools/kueue tools/kueue-$(KUEUE_OLD) tools/kwok tools/jobset tools/jobset-e2e tools/trainer tools/trainer-$(TRAINER_OLD) tools/helm tools/volcano tools/kai tools/schedplugins tools/schedplugins-$(SCHEDPLUGINS_OLD) tools/vuln tools/prometheus tools/kind tools/ko tools/containerd tools/crictl tools/coredns charts/jobset-addons/tests hack/release \
	$(foreach v,$(filter-out $(KUBE_DEFAULT) $(KUBE_NEXT),$(COMPAT_KUBE_VERSIONS)),tools/kube-$v) \
	$(if $(filter $(KUBE_NEXT),$(KUBE_VERSION)),tools/kube-$(KUBE_NEXT)) \
	$(foreach v,$(filter-out $(JOBSET_VERSION),$(COMPAT_JOBSET_VERSIONS)),tools/jobset-$v)
# The wrapper modules pinned to go.work's versions of what they share with our code, with a
# package each builds: their builds reuse what building ours compiled (hack/shared-deps-check.sh,
# and the order-only prerequisite on our binaries in make/tools.mk).
SHARED_DEPS_TOOLS := tools/jobset=sigs.k8s.io/jobset tools/jobset-e2e=sigs.k8s.io/jobset/test/e2e \
	tools/kwok=sigs.k8s.io/kwok/cmd/kwok tools/helm=helm.sh/helm/v4/cmd/helm

.PHONY: build
CONTROLLER_BINS := $(addprefix $(BIN)/,$(CONTROLLERS))
build: $(CONTROLLER_BINS) $(BIN)/kubectl-jobset_addons ## try: Build the four controllers and the kubectl plugin into bin/

# One go build (go.work) for the four controllers and the kubectl plugin (`kubectl jobset-addons
# status JOBSET` once bin/ is on PATH): they share most of their packages.
$(CONTROLLER_BINS) $(BIN)/kubectl-jobset_addons &: FORCE
	@mkdir -p $(BIN)
	tmp=$$(mktemp -d $(BIN)/.build-XXXXXX) && trap 'rm -rf "$$tmp"' EXIT && \
		go build -o $$tmp/ $(addprefix ./controllers/,$(CONTROLLERS)) ./cmd/kubectl-jobset-addons && \
		mv $$tmp/kubectl-jobset-addons $$tmp/kubectl-jobset_addons && mv -f $$tmp/* $(BIN)/

.PHONY: FORCE
FORCE:

.PHONY: docs
docs: ## test: Write docs/reference.md (the annotation reference) and the docs explain prints, from pkg/contract
	cd pkg/contract && GOWORK=off go run ./internal/docgen $(ROOT)/docs/reference.md

.PHONY: docs-lint
docs-lint: ## test: Check the docs: links, anchors, `make` commands, the knobs table, no history
	@hack/docs-lint.sh

.PHONY: verify
verify: ## test: gofmt, go vet, go mod tidy, every module builds alone, docs, govulncheck
	@bad=$$(gofmt -l $(MODULES) tools hack 2>/dev/null); if [ -n "$$bad" ]; then echo "gofmt would change:"; echo "$$bad"; exit 1; fi
	@GO_NEXT=$(GO_NEXT) hack/tidy-check.sh $(MODULES) $(TOOL_MODULES)
	@for m in $(MODULES) hack/release; do echo "== $$m (GOWORK=off)"; (cd $$m && GOWORK=off go vet ./... && GOWORK=off go build -o /dev/null ./...) || exit 1; done
	@hack/shared-deps-check.sh $(SHARED_DEPS_TOOLS)
	@cd pkg/contract && GOWORK=off go run ./internal/docgen -check $(ROOT)/docs/reference.md
	@hack/docs-lint.sh
	@$(MAKE) --no-print-directory vulncheck
	@echo "verify: ok"

.PHONY: vulncheck
vulncheck: $(GOVULNCHECK) ## tools: govulncheck every module (GOVULNDB), and prove a fake entry fails it
	@hack/vulncheck.sh $(GOVULNCHECK) $(MODULES)
	@hack/vulncheck-selftest.sh $(GOVULNCHECK)
