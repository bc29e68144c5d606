package trainer_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/e2e/framework"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// barrierTimes polls a JobSet's pods and records, per pod, its ReplicatedJob, when it was first
// seen waiting at its start barrier (bound, the barrier container running) and when first seen
// told open.
type barrierTimes struct {
	mu      sync.Mutex
	rj      map[types.UID]string
	name    map[types.UID]string
	waiting map[types.UID]time.Time
	opened  map[types.UID]time.Time
	stop    func()
}

func watchBarrier(ctx context.Context, c client.Client, ns, jobSet string) *barrierTimes {
	w := &barrierTimes{rj: map[types.UID]string{}, name: map[types.UID]string{}, waiting: map[types.UID]time.Time{}, opened: map[types.UID]time.Time{}}
	w.stop = framework.PollPods(ctx, c, func(pods []corev1.Pod) {
		now := time.Now()
		w.mu.Lock()
		defer w.mu.Unlock()
		for _, p := range pods {
			w.rj[p.UID], w.name[p.UID] = p.Labels[contract.ReplicatedJobNameLabelKey], p.Name
			if _, seen := w.waiting[p.UID]; !seen && p.Spec.NodeName != "" && slices.ContainsFunc(p.Status.InitContainerStatuses, func(s corev1.ContainerStatus) bool {
				return s.Name == contract.StartBarrierContainerName && s.State.Running != nil
			}) {
				w.waiting[p.UID] = now
			}
			if _, seen := w.opened[p.UID]; !seen && p.Annotations[contract.StartBarrierStateAnnotationKey] == contract.StartBarrierOpen {
				w.opened[p.UID] = now
			}
		}
	}, client.InNamespace(ns), client.MatchingLabels{contract.JobSetNameLabelKey: jobSet})
	return w
}

// check stops the watch and returns what breaks the barrier's promise for the stages of a
// Trainer runtime with initializers: every pod waited and was opened, and no pod of a stage was
// opened before every pod of its stage waited.
func (w *barrierTimes) check(stageOf func(rj string) int) []string {
	w.stop()
	w.mu.Lock()
	defer w.mu.Unlock()
	var problems []string
	lastWaiting := map[int]time.Time{}
	for uid, rj := range w.rj {
		at, ok := w.waiting[uid]
		if !ok {
			problems = append(problems, fmt.Sprintf("pod %s (%s) never seen waiting at its barrier", w.name[uid], rj))
			continue
		}
		if s := stageOf(rj); at.After(lastWaiting[s]) {
			lastWaiting[s] = at
		}
	}
	for uid, rj := range w.rj {
		opened, ok := w.opened[uid]
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("pod %s (%s) never told open", w.name[uid], rj))
		case opened.Before(lastWaiting[stageOf(rj)]):
			problems = append(problems, fmt.Sprintf("pod %s (%s) told open at %s, before the last pod of its stage waited (%s)",
				w.name[uid], rj, opened.Format(time.StampMilli), lastWaiting[stageOf(rj)].Format(time.StampMilli)))
		}
	}
	return problems
}

// TestInitializersWithBarrier runs a TrainJob of a runtime shaped like Trainer's own runtimes
// with initializers (upstream dependsOn, the initializers' PVC of upstream volumeClaimPolicies)
// whose JobSet template asks all four add-ons, the start barrier of the whole JobSet among
// them: the TrainJob completes, each stage's pods started together, the node pods got their
// checkpoint PVCs (retained), their Job's claim and their gang.
func TestInitializersWithBarrier(t *testing.T) {
	f := framework.NamespacedFeature("Trainer: a runtime with initializers, the start barrier and all four add-ons", "completes, each stage opened together", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		c := framework.Client(t, cfg)
		ns := framework.NamespaceFrom(ctx)
		const name = "llm"
		rt := runtimeFrom(t, "initializers-barrier-runtime.yaml", ns, nil)
		tj := trainJob(ns, name, rt.GetName())
		w := watchBarrier(ctx, c, ns, name)
		defer func() {
			if t.Failed() {
				framework.DumpNamespace(context.WithoutCancel(ctx), t, c, ns)
			}
		}()
		create(ctx, t, c, rt, tj)
		waitTrainJob(ctx, t, c, tj, "Complete")
		stageOf := func(rj string) int {
			if rj == "node" {
				return 1
			}
			return 0
		}
		for _, p := range w.check(stageOf) {
			t.Error(p)
		}

		js := &jobsetv1alpha2.JobSet{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, js); err != nil {
			t.Fatal(err)
		}
		reasons, err := framework.EventReasons(ctx, c, js)
		if err != nil {
			t.Fatal(err)
		}
		if n := reasons["StartBarrierTimedOut"]; n > 0 {
			t.Errorf("%d StartBarrierTimedOut Events", n)
		}
		framework.WaitEventCounts(ctx, t, c, js, map[string]int{"StartBarrierOpened": 2})

		var pods corev1.PodList
		if err := c.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{contract.JobSetNameLabelKey: name}); err != nil {
			t.Fatal(err)
		}
		nodes := 0
		for _, p := range pods.Items {
			if p.Labels[contract.ReplicatedJobNameLabelKey] != "node" {
				continue
			}
			nodes++
			idx := p.Annotations["batch.kubernetes.io/job-completion-index"]
			// volumeclaims: the node pod's own checkpoint PVC.
			if want := "checkpoint-" + name + "-node-0-" + idx; !slices.ContainsFunc(p.Spec.Volumes, func(v corev1.Volume) bool {
				return v.Name == "checkpoint" && v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == want
			}) {
				t.Errorf("node pod %s does not mount its PVC %s: %+v", p.Name, want, p.Spec.Volumes)
			}
			// resourceclaims: its Job's claim.
			if want := name + "-node-0-gpu"; !slices.ContainsFunc(p.Spec.ResourceClaims, func(rc corev1.PodResourceClaim) bool {
				return ptr.Deref(rc.ResourceClaimName, "") == want
			}) {
				t.Errorf("node pod %s does not use its Job's claim %s: %+v", p.Name, want, p.Spec.ResourceClaims)
			}
			// podgroups: the node stage's gang of Kubernetes' Workload API.
			if sg := p.Spec.SchedulingGroup; sg == nil || !strings.HasPrefix(ptr.Deref(sg.PodGroupName, ""), name) {
				t.Errorf("node pod %s is in no gang of the JobSet: %+v", p.Name, sg)
			}
		}
		if nodes != 2 {
			t.Errorf("%d node pods, want 2", nodes)
		}
		// The checkpoints outlive the completed TrainJob (whenComplete: Retain).
		for i := range 2 {
			var pvc corev1.PersistentVolumeClaim
			if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: fmt.Sprintf("checkpoint-%s-node-0-%d", name, i)}, &pvc); err != nil {
				t.Errorf("checkpoint PVC %d: %v", i, err)
			}
		}
		return ctx
	})
	testenv.Test(t, f)
}
