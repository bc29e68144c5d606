# Trying it: the demo (hack/demo.sh, on the testbed or, DEMO_CLUSTER=kind, on a kind cluster) and
# the testbed by hand (e2e/README.md).
DEMO_CLUSTER ?= testbed

.PHONY: demo
demo: build testbed-bins $(TESTBEDCTL) $(if $(filter kind,$(DEMO_CLUSTER)),kind-up-deps) ## try: Start a testbed, run the controllers, apply examples/, show what they did
	$(if $(filter kind,$(DEMO_CLUSTER)),$(KIND_ENV)) hack/demo.sh

.PHONY: demo-down
demo-down: $(TESTBEDCTL) ## try: Stop what make demo started
	$(if $(filter kind,$(DEMO_CLUSTER)),$(KIND_ENV) $(TESTBEDCTL) kind-down,$(TESTBEDCTL) down)

.PHONY: testbed-up
testbed-up: testbed-bins $(TESTBEDCTL) ## try: Start the local testbed and print its KUBECONFIG
	$(TESTBEDCTL) up

.PHONY: testbed-down
testbed-down: $(TESTBEDCTL) ## try: Stop the testbed; no process or port is left
	$(TESTBEDCTL) down
