# Releases (docs/releasing.md): make release VERSION=vX.Y.Z writes dist/, with no Docker; make
# release-push and make release-check publish it and check what was published.
RELEASE_TOOL := $(BIN)/release
$(RELEASE_TOOL): FORCE
	cd hack/release && GOWORK=off go build -o $@ .
RELEASE_ENV = KO=$(KO) HELM=$(HELM_DIR)/helm RELEASE_TOOL=$(RELEASE_TOOL) GOVULNCHECK=$(GOVULNCHECK) RELEASE_MODULES="$(MODULES)"

.PHONY: release
release: ## release: dist/ for VERSION: images, chart, kubectl plugin, SBOMs; built twice, must match
	@hack/release.sh --preflight $(VERSION)
	@$(MAKE) --no-print-directory $(KO) $(HELM_DIR)/helm $(RELEASE_TOOL) $(if $(filter 1,$(RELEASE_SKIP_VULNCHECK)),,$(GOVULNCHECK))
	$(RELEASE_ENV) hack/release.sh $(VERSION)

.PHONY: release-push
release-push: $(HELM_DIR)/helm $(RELEASE_TOOL) ## release: Push dist/ (images, SBOMs, the chart) to REGISTRY=host:port/prefix
	$(RELEASE_ENV) hack/release-push.sh $(VERSION) $(REGISTRY)

.PHONY: release-check
release-check: $(HELM_DIR)/helm $(RELEASE_TOOL) ## release: Push dist/ to a local registry, install it from there and check it
	$(RELEASE_ENV) KUBECTL=$(TESTBED)/kubectl hack/release-check.sh $(VERSION)
