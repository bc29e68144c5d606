package multicluster_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/e2e/framework"
)

// podRun is how long each pod of the suite's JobSets runs: long enough for the manager's copy to
// show a stage running.
const podRun = "3s"

// TestDispatched: a JobSet that uses all four add-ons (framework.AllAddonsJobSet: a shared and a
// per-pod PVC, a per-Job claim, InOrder stages, a gang per stage on the kubernetes backend),
// queued in the manager, runs and completes in the worker. Both namespaces are watched from
// before its creation to the end: its PVCs, claim, gangs, Jobs and pods appear in the worker
// only, never in the manager; its node stage is bound only after its init stage succeeded; the
// manager's copy shows the worker's progress and completes; `kubectl jobset-addons status` in the
// manager names MultiKueue and the worker. Then the same JobSet without the add-ons' annotations
// (framework.WithoutAddons), the control: queue-to-Completed-mirrored times of both are logged.
func TestDispatched(t *testing.T) {
	ctx := context.Background()
	mc, err := clientOf(manager)
	if err != nil {
		t.Fatal(err)
	}
	wc, err := clientOf(worker)
	if err != nil {
		t.Fatal(err)
	}
	ns := "mk-" + rand.String(6)
	for _, c := range []client.Client{mc, wc} {
		if err := create(ctx, c, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
			framework.KueueObject("LocalQueue", ns, localQueue, map[string]any{"clusterQueue": clusterQueue})); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	inManager := record(ctx, t, manager, "manager", ns, start)
	inWorker := record(ctx, t, worker, "worker", ns, start)
	defer func() {
		inManager.stop()
		inWorker.stop()
		for _, js := range []string{"all", "plain"} {
			inManager.report(t, js)
			inWorker.report(t, js)
		}
	}()

	all := queued(framework.AllAddonsJobSet(ns, "all"))
	took := dispatch(ctx, t, mc, wc, all, func() {
		// While it runs: the plugin, run against the manager, says who manages it and where.
		framework.Eventually(ctx, t, time.Minute, "kubectl jobset-addons status in the manager names the worker", func(ctx context.Context) (bool, string, error) {
			out := framework.AddonsStatusAt(ctx, t, manager.Kubeconfig(), ns, all.Name)
			return strings.Contains(out, "Managed by "+multiKueueController) && strings.Contains(out, "in the worker cluster "+workerName+": its PVCs"), out, nil
		})
		t.Logf("kubectl jobset-addons status, in the manager, while it runs:\n%s", framework.AddonsStatusAt(ctx, t, manager.Kubeconfig(), ns, all.Name))
	})
	if t.Failed() {
		return
	}
	// Everything the add-ons make, in the worker.
	want := map[string]int{"pvcs": 2, "claims": 1, "workloads": 1, "jobs": 2, "pods": 2}
	for kind, n := range want {
		if got := inWorker.appearedOf("all", kind); got != n {
			t.Errorf("worker: %d %s appeared for the JobSet, want %d", got, kind, n)
		}
	}
	if got := inWorker.appearedOf("all", "podgroups"); got < 1 {
		t.Errorf("worker: no PodGroup appeared for the JobSet")
	}
	// Its stages in order there.
	initBound, initDone, okInit := inWorker.podMoments("all-init-")
	nodeBound, _, okNode := inWorker.podMoments("all-node-")
	switch {
	case !okInit || !okNode || initDone == 0:
		t.Errorf("worker: the stages' pods were not seen bound and done (init %v, node %v)", okInit, okNode)
	case nodeBound < initDone:
		t.Errorf("worker: node's pod bound at %s, before init's pod succeeded at %s", nodeBound, initDone)
	default:
		t.Logf("worker: init bound at %.1fs, succeeded at %.1fs; node bound at %.1fs", initBound.Seconds(), initDone.Seconds(), nodeBound.Seconds())
	}
	// The manager's copy showed the worker's progress before it completed.
	progress := false
	for _, s := range inManager.statuses("all") {
		progress = progress || (strings.Contains(s, "node: active 1") && !strings.Contains(s, "Completed"))
	}
	if !progress {
		t.Errorf("the manager's copy never showed the node stage running; its statuses: %q", inManager.statuses("all"))
	}

	plain := queued(framework.WithoutAddons(framework.AllAddonsJobSet(ns, "plain")))
	tookPlain := dispatch(ctx, t, mc, wc, plain, nil)
	if t.Failed() {
		return
	}
	t.Logf("queued in the manager to Completed mirrored back: with the add-ons %.1fs, without %.1fs (same run, one after the other)", took.Seconds(), tookPlain.Seconds())

	// A few seconds more of watching: what MultiKueue does with the finished worker copies.
	time.Sleep(5 * time.Second)
	for _, js := range []string{"all", "plain"} {
		if seen := inManager.kindsSeen(js, addonKinds); len(seen) > 0 {
			t.Errorf("manager: objects appeared for the JobSet %s: %v", js, seen)
		}
	}
}

// queued is js queued in the suite's LocalQueue, each pod asking a little CPU (Kueue's quota)
// and running podRun.
func queued(js *jobsetv1alpha2.JobSet) *jobsetv1alpha2.JobSet {
	js.Labels = map[string]string{queueNameLabel: localQueue}
	for i := range js.Spec.ReplicatedJobs {
		pod := &js.Spec.ReplicatedJobs[i].Template.Spec.Template
		pod.Annotations[framework.DelayAnnotationKey] = podRun
		for c := range pod.Spec.Containers {
			pod.Spec.Containers[c].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}
		}
	}
	return js
}

// dispatch creates js in the manager and waits until the manager's copy is Completed (as
// MultiKueue mirrors it from the worker), calling whileRunning once the worker's copy exists. It
// checks that Kueue gave the manager's copy MultiKueue's spec.managedBy and the worker's none,
// and returns the time from the creation to Completed seen in the manager.
func dispatch(ctx context.Context, t *testing.T, mc, wc client.Client, js *jobsetv1alpha2.JobSet, whileRunning func()) time.Duration {
	t.Helper()
	created := time.Now()
	if err := mc.Create(ctx, js); err != nil {
		t.Fatalf("creating %s in the manager: %v", js.Name, err)
	}
	if got := ptr.Deref(js.Spec.ManagedBy, ""); got != multiKueueController {
		t.Errorf("the manager's %s: spec.managedBy %q, want Kueue's default %q", js.Name, got, multiKueueController)
	}
	remote := &jobsetv1alpha2.JobSet{}
	framework.Eventually(ctx, t, 2*time.Minute, fmt.Sprintf("the worker's copy of %s", js.Name), func(ctx context.Context) (bool, string, error) {
		err := wc.Get(ctx, client.ObjectKeyFromObject(js), remote)
		return err == nil, fmt.Sprint(err), nil
	})
	if remote.Spec.ManagedBy != nil {
		t.Errorf("the worker's %s: spec.managedBy %q, want none (JobSet's own controller)", js.Name, *remote.Spec.ManagedBy)
	}
	if whileRunning != nil {
		whileRunning()
	}
	local := &jobsetv1alpha2.JobSet{}
	framework.Eventually(ctx, t, 3*time.Minute, fmt.Sprintf("the manager's %s Completed", js.Name), func(ctx context.Context) (bool, string, error) {
		if err := mc.Get(ctx, client.ObjectKeyFromObject(js), local); err != nil {
			return false, err.Error(), nil
		}
		return apimeta.IsStatusConditionTrue(local.Status.Conditions, string(jobsetv1alpha2.JobSetCompleted)), fmt.Sprint(local.Status), nil
	})
	return time.Since(created)
}
