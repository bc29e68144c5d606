#!/usr/bin/env bash
# make demo: start the testbed, run every controller built so far, apply examples/, and show
# what happened. The testbed keeps running afterwards; `make demo-down` stops it all.
# DEMO_CLUSTER=kind make demo does the same on the kind cluster of make e2e-kind (real pods, the
# chart installed); DEMO_CLUSTER=kind make demo-down deletes it.
# make demo-gangs (demo.sh gangs): on the running testbed of make demo, starts Volcano's and
# coscheduling's schedulers, which make demo does not build first, and runs the examples that use them.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
K="$ROOT/bin/testbed/kubectl"
NS=jobset-addons-system
MODE=${1:-demo}
# The testbed's work directory: TESTBED_DIR (relative to the checkout) or .testbed.
tbdir=${TESTBED_DIR:-.testbed}
[[ $tbdir == /* ]] || tbdir=$ROOT/$tbdir
# The testbed's knobs set for this run, for the commands it prints (make demo-down).
tbenv=""
for v in TESTBED_DIR TESTBED_NAME TESTBED_PORT_BASE; do
	if [[ -n ${!v:-} ]]; then tbenv+="$v=${!v} "; fi
done
# The examples whose gangs need Volcano's or coscheduling's scheduler.
gang_examples() { grep -lE 'podgroups.jobset-addons.io/scheduler: (volcano|coscheduling)' $(find examples -name '*.yaml' -not -path 'examples/tutorial/*' | sort); }
have_gangs() { [[ -e bin/testbed/vc-scheduler && -e bin/testbed/vc-controller-manager && -e bin/testbed/sp-scheduler ]]; }
start_gangs() {
	# The gang schedulers and their CRDs, then podgroups again: it watches the PodGroup kinds
	# served when it starts.
	bin/testbedctl gang
	if [[ ${1:-} == restart ]]; then bin/testbedctl addon podgroups; fi
}

if [[ $MODE == gangs ]]; then
	export KUBECONFIG=$tbdir/kubeconfig
	DOWN="${tbenv}make demo-down"
	if ! "$K" get --raw /readyz >/dev/null 2>&1; then
		echo "no testbed answers at $KUBECONFIG: run make demo first" >&2
		exit 1
	fi
	start_gangs restart
	echo
	echo "== kubectl apply: the examples whose gangs Volcano or coscheduling schedule"
	files=()
	while IFS= read -r f; do files+=(-f "$f"); done < <(gang_examples)
	"$K" apply --server-side "${files[@]}"
elif [[ ${DEMO_CLUSTER:-testbed} == kind ]]; then
	# Real containers: the kind cluster of make e2e-kind, with the chart installed. The examples
	# that run on one small node without Volcano (its scheduler is not in the cluster) and
	# without the testbed's fake devices, each container swapped for the busybox image loaded
	# in the cluster (nothing can be pulled), which exits at once.
	kubeconfig=$(bin/testbedctl kind-up | sed -n 's/^KUBECONFIG=//p')
	export KUBECONFIG=$kubeconfig
	DOWN="make demo-down DEMO_CLUSTER=kind"
	echo
	echo "== kubectl apply: examples/basic-jobset.yaml examples/volumeclaims/story{1,2}* examples/sequencer/, images swapped for kind.local/busybox:e2e"
	for f in examples/basic-jobset.yaml examples/volumeclaims/story1-*.yaml examples/volumeclaims/story2-*.yaml examples/sequencer/*.yaml; do
		cat "$f"
		echo ---
	done | sed -E 's|^( *)image: .*|\1image: kind.local/busybox:e2e|' | "$K" apply --server-side -f -
else
	bin/testbedctl up
	export KUBECONFIG=$tbdir/kubeconfig
	DOWN="${tbenv}make demo-down"
	gangs=no
	if have_gangs; then gangs=yes && start_gangs; fi

	for c in volumeclaims resourceclaims sequencer podgroups; do
		bin/testbedctl addon "$c"
	done

	# Every example but examples/tutorial/, which docs/tutorial.md applies step by step, and,
	# before make demo-gangs has built their schedulers, those of Volcano's and coscheduling's gangs.
	echo
	skip=()
	if [[ $gangs == yes ]]; then
		echo "== kubectl apply: every file of examples/ but examples/tutorial/ (docs/tutorial.md)"
	else
		mapfile -t skip < <(gang_examples)
		echo "== kubectl apply: every file of examples/ but examples/tutorial/ (docs/tutorial.md) and ${skip[*]} (make demo-gangs)"
	fi
	files=()
	while IFS= read -r f; do
		[[ " ${skip[*]} " == *" $f "* ]] || files+=(-f "$f")
	done < <(find examples -name '*.yaml' -not -path 'examples/tutorial/*' | sort)
	"$K" apply --server-side "${files[@]}"
fi
echo
echo "== waiting for the example JobSets to finish"
begin=$(date +%s)
while :; do
	pending=$("$K" get jobsets -A --no-headers -o custom-columns='NS:.metadata.namespace,NAME:.metadata.name,DONE:.status.terminalState' | awk '$3=="<none>"{print $1"/"$2}')
	elapsed=$(( $(date +%s) - begin ))
	if [ -z "$pending" ]; then echo "  all finished after ${elapsed}s"; break; fi
	echo "  ${elapsed}s: still running: $(echo $pending | tr '\n' ' ')"
	if [ "$elapsed" -ge 180 ]; then echo "not finished within 180s" >&2; exit 1; fi
	sleep 3
done
failed=$("$K" get jobsets -A --no-headers -o custom-columns='NAME:.metadata.name,DONE:.status.terminalState' | awk '$2!="Completed"{print $1}')
if [ -n "$failed" ]; then echo "JobSets that did not complete: $failed" >&2; exit 1; fi

echo
echo "== nodes"
"$K" get nodes -o wide
echo
echo "== JobSets"
"$K" get jobsets -A
echo
echo "== PersistentVolumeClaims made by volumeclaims (the retained ones; shared ones with whenComplete: Delete are gone)"
"$K" get pvc -A -l app.kubernetes.io/managed-by=volumeclaims.jobset-addons.io \
	-L jobset.sigs.k8s.io/jobset-name,volumeclaims.jobset-addons.io/replicatedjob,volumeclaims.jobset-addons.io/job-index,volumeclaims.jobset-addons.io/pod-index
echo
echo "== PodGroups and Workloads made by podgroups (each goes once its JobSet or stage finished: none should be left)"
# Of the gang kinds, those the cluster serves (Volcano's and coscheduling's come with make demo-gangs).
kinds=$({ "$K" api-resources --no-headers -o name 2>/dev/null || true; } | { grep -xE 'podgroups\.scheduling\.(volcano\.sh|x-k8s\.io|k8s\.io)|workloads\.scheduling\.k8s\.io' || true; } | paste -sd, -)
if [[ -n $kinds ]]; then
	"$K" get "$kinds" -A -l app.kubernetes.io/managed-by=podgroups.jobset-addons.io 2>&1
else
	echo "(this cluster serves none of the gang kinds)"
fi
echo
echo "== what volumeclaims, sequencer and podgroups did, as Events on the JobSets"
"$K" get events -A --field-selector involvedObject.kind=JobSet -o custom-columns=JOBSET:.involvedObject.name,REASON:.reason,MESSAGE:.message | grep -E 'VolumeClaims|StageReleased|PodGroup|Workload|NetworkTopology|JOBSET' | cut -c1-150
echo
echo "== what sequencer released (sequencer.jobset-addons.io/released)"
"$K" get jobsets -A -o custom-columns='JOBSET:.metadata.name,RELEASED:.metadata.annotations.sequencer\.jobset-addons\.io/released' | grep -v '<none>'
echo
echo "== what the add-ons did, per JobSet (kubectl jobset-addons status)"
"$K" get jobsets -A --no-headers -o custom-columns='NS:.metadata.namespace,NAME:.metadata.name' | while read -r ns name; do
	echo
	bin/kubectl-jobset_addons status -n "$ns" --events 5 "$name"
done
echo
echo "== leader election: one Lease per controller"
"$K" get leases -n "$NS"
echo
echo "The cluster is still running. To look around:"
echo "  export KUBECONFIG=$KUBECONFIG PATH=$ROOT/bin/testbed:$ROOT/bin:\$PATH"
echo "  kubectl jobset-addons status JOBSET   (the kubectl plugin bin/kubectl-jobset_addons)"
echo "Next, a training JobSet step by step: docs/tutorial.md"
if [[ $MODE != gangs ]] && [[ ${DEMO_CLUSTER:-testbed} != kind ]] && ! have_gangs; then
	echo "Gangs through Volcano and coscheduling: make demo-gangs (builds their schedulers, then runs their examples here)"
fi
echo "Stop it with: $DOWN"
