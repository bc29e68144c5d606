# Benchmarks (e2e/bench): each add-on on the testbed against a bare client-go loop making the
# same objects at the add-on's limits, or against upstream JobSet, in the same run; each prints a
# table (the figures and how they were taken: docs/performance). The testbed is started for the
# run unless KUBECONFIG is set.
#
#   make bench                             every benchmark of e2e/bench, BENCHTIME each
#   make bench ADDON=NAME [SCENARIO=a,b]   one add-on's benchmark, or only those scenarios of it:
#     volumeclaims    latency admission rss perpod shared; without SCENARIO, the pod webhook's
#                     in-process benchmarks first
#     resourceclaims  latency admission claims; without SCENARIO, the Job webhook's in-process
#                     benchmark first
#     sequencer       handoff (against upstream dependsOn), barrier (the start barrier opening
#                     BENCH_BARRIER_PODS pods)
#     podgroups       create update kubernetes coscheduling
#     scale           the four add-ons together on SCALE_NODES nodes: mixed big, and release
#                     when named (e2e/bench/scale_test.go has its sizes: SCALE_JOBSETS, ...)
#     peers           each add-on against the controllers users would use instead, interleaved
#                     round by round (BENCH_ROUNDS, at least 5): volumeclaims (a StatefulSet's
#                     volumeClaimTemplates, generic ephemeral volumes), resourceclaims (a
#                     ResourceClaimTemplate); the peers of kube-controller-manager run in a second
#                     one of their own, on a testbed of PEERS_NODES nodes; podgroups (each
#                     backend against Kueue's Workloads and Volcano's job controller) and
#                     podgroups-restart (the cold starts of the three), which build Volcano's
#                     controller-manager first
#     dryrun-memory   each add-on's webhook RSS before, at peak and after BENCH_DRYRUN_JOBSETS
#                     (5,000) distinct ~200 KB JobSets sent as server-side dry runs; SCENARIO
#                     names the add-ons (volumeclaims,resourceclaims,...), all four by default,
#                     or is together: the four at once, each JobSet using all four
# SCENARIO is handed to the benchmark as its knob below (VOLUMECLAIMS_BENCH, ...).
ADDON ?=
SCENARIO ?=
BENCHTIME ?= 2000x
SCALE_NODES ?= 20
PEERS_NODES ?= 24

bench_knob.volumeclaims   := VOLUMECLAIMS_BENCH
bench_knob.resourceclaims := RESOURCECLAIMS_BENCH
bench_knob.sequencer      := SEQUENCER_BENCH
bench_knob.podgroups      := PODGROUPS_BENCH
bench_knob.scale          := SCALE_BENCH
bench_knob.dryrun-memory  := BENCH_DRYRUN_ADDONS
bench_knob.peers          := PEERS_BENCH
# The benchmarks of e2e/bench each runs (go test -bench), for how long at most, with what set.
bench_funcs.volumeclaims   := VolumeClaims
bench_funcs.resourceclaims := ResourceClaims
bench_funcs.sequencer      := "^Benchmark(Sequencer|StartBarrier)$$"
bench_funcs.podgroups      := PodGroups
bench_funcs.scale          := "^BenchmarkScale$$"
bench_funcs.dryrun-memory  := "^BenchmarkDryRunMemory$$"
bench_funcs.peers          := "^BenchmarkPeers$$"
bench_timeout.sequencer := 90m
bench_timeout.scale     := 180m
bench_timeout.dryrun-memory := 180m
bench_timeout.peers         := 180m
# The API server's GOGC: the two benchmarks of cold starts keep its garbage collection out of
# the measured windows (CONTRIBUTING.md).
bench_env.resourceclaims := TESTBED_APISERVER_GOGC=400
bench_env.podgroups      := TESTBED_APISERVER_GOGC=400
bench_env.scale          = BENCH_SCALE=1 TESTBED_NODES=$(SCALE_NODES)
bench_env.dryrun-memory  := BENCH_DRYRUN_MEMORY=1
# The testbed's kube-controller-manager leaves the peers' controllers to a second one of their
# own, whose CPU is read apart (e2e/bench/peers_test.go).
PEERS_KUBE_CONTROLLERS := *,-statefulset-controller,-ephemeral-volume-controller,-resourceclaim-controller
bench_env.peers          = TESTBED_NODES=$(PEERS_NODES) TESTBED_KUBE_CONTROLLERS='$(PEERS_KUBE_CONTROLLERS)' \
	VOLCANO_CONTROLLER_MANAGER=$(VOLCANO_CM)
# What a benchmark needs beyond the testbed: the podgroups peers (make bench ADDON=peers, all its
# scenarios or one of podgroups*) Kueue and Volcano's controller-manager, built here on first use.
bench_needs = $(if $(and $(filter peers,$(ADDON)),$(if $(SCENARIO),$(findstring podgroups,$(SCENARIO)),all)),kueue-bins $(VOLCANO_CM))
# In-process benchmarks of a webhook (no testbed), run first when no SCENARIO is named.
bench_first.volumeclaims   = cd controllers/volumeclaims && GOWORK=off go test -run '^$$' -bench '^BenchmarkPodWebhook$$' -benchmem ./internal/webhook/ && \
	GOWORK=off go test -run '^$$' -bench 'PodWebhookOverTLS' -benchtime 1x ./internal/webhook/
bench_first.resourceclaims = cd controllers/resourceclaims && GOWORK=off go test -run '^$$' -bench '^BenchmarkJobWebhook$$' -benchmem ./internal/webhook/

ifneq ($(ADDON),)
ifeq ($(bench_knob.$(ADDON)),)
$(error ADDON=$(ADDON): no such benchmark (one of: volumeclaims resourceclaims sequencer podgroups scale peers dryrun-memory))
endif
endif
bench_addon = $(strip $(bench_env.$(ADDON)) $(if $(SCENARIO),$(bench_knob.$(ADDON))=$(SCENARIO))) hack/with-testbed.sh bash -c 'cd e2e && GOWORK=off go test -run "^$$" -bench $(bench_funcs.$(ADDON)) -benchtime 1x -timeout $(or $(bench_timeout.$(ADDON)),30m) ./bench/'
bench_all = hack/with-testbed.sh bash -c 'cd e2e && GOWORK=off go test -run "^$$" -bench . -benchtime $(BENCHTIME) -timeout 30m ./bench/'

.PHONY: bench
bench: build testbed-bins $(TESTBEDCTL) $(bench_needs) ## bench: Every benchmark on the testbed; ADDON=name [SCENARIO=a,b]: one add-on's
	$(if $(and $(ADDON),$(if $(SCENARIO),,$(bench_first.$(ADDON)))),$(bench_first.$(ADDON)))
	$(if $(ADDON),$(bench_addon),$(bench_all))

# make test runs it on a testbed of its own (hack/test.sh), whose kube-controller-manager leaves
# the peers' controllers to their own (PEERS_KUBE_CONTROLLERS): thresholds and their noise in
# e2e/bench/smoke_test.go and docs/performance/scale.md (bench-smoke).
.PHONY: bench-smoke
bench-smoke: build testbed-bins kueue-bins $(TESTBEDCTL) ## bench: Reduced headline benchmarks; fails when a ratio falls below its threshold
	TESTBED_KUBE_CONTROLLERS='$(PEERS_KUBE_CONTROLLERS)' hack/with-testbed.sh bash -c 'cd e2e && GOWORK=off go test -count=1 -run "^$$" -bench "^BenchmarkSmoke$$" -benchtime 1x -timeout 20m ./bench/'
