# Trying it: the demo (hack/demo.sh, on the testbed or, DEMO_CLUSTER=kind, on a kind cluster) and
# the testbed by hand (e2e/README.md).
DEMO_CLUSTER ?= testbed

.PHONY: demo
# Only what the demo runs is built before it starts, TOOL_JOBS builds at once; the rest of the
# tools (the gang schedulers included: make demo-gangs) is built when a target first needs it.
demo: ## try: Start a testbed, run the controllers, apply examples/, show what they did
	$(MAKE) --no-print-directory -j$(TOOL_JOBS) testbed-core-bins demo-own-bins
	$(if $(filter kind,$(DEMO_CLUSTER)),$(MAKE) --no-print-directory kind-up-deps)
	$(if $(filter kind,$(DEMO_CLUSTER)),$(KIND_ENV)) hack/demo.sh

# Ours, then testbedctl, which reuses what they compiled.
.PHONY: demo-own-bins
demo-own-bins: build
	$(MAKE) --no-print-directory $(TESTBEDCTL)

.PHONY: demo-gangs
demo-gangs: ## try: Add Volcano's and coscheduling's schedulers to make demo's testbed, run their examples
	$(MAKE) --no-print-directory -j$(TOOL_JOBS) testbed-bins
	hack/demo.sh gangs

.PHONY: demo-down
demo-down: $(TESTBEDCTL) ## try: Stop what make demo started
	$(if $(filter kind,$(DEMO_CLUSTER)),$(KIND_ENV) $(TESTBEDCTL) kind-down,$(TESTBEDCTL) down)

.PHONY: testbed-up
testbed-up: testbed-bins $(TESTBEDCTL) ## try: Start the local testbed and print its KUBECONFIG
	$(TESTBEDCTL) up

.PHONY: testbed-down
testbed-down: $(TESTBEDCTL) ## try: Stop the testbed; no process or port is left
	$(TESTBEDCTL) down
