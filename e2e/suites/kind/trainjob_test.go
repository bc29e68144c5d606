package kind_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	coschedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"github.com/jobset-addons/jobset-addons/e2e/framework"
	"github.com/jobset-addons/jobset-addons/e2e/kindbed"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// TestTrainJobOnRealNodes installs Kubeflow Trainer (its controller manager built here, its
// own manifests) and runs a TrainJob of a runtime with initializers (testdata), whose JobSet
// template asks all four add-ons, the start barrier of the whole JobSet among them: the
// TrainJob completes; each stage's pods passed the barrier together (no main container started
// before the last pod of its stage reached the barrier); each node pod wrote its own
// checkpoint PVC, bound on the node the pod ran on; each initializer Job's claim was made and its
// device seen by its container (the DRA driver's); each stage's gang was made and its pods bound
// by the coscheduling scheduler.
func TestTrainJobOnRealNodes(t *testing.T) {
	f := framework.NamespacedFeature("Trainer: a TrainJob with initializers, the start barrier and all four add-ons", "completes on real nodes", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		start := time.Now()
		if err := kindbed.InstallTrainer(ctx, kb, logf); err != nil {
			t.Fatal(err)
		}
		t.Logf("Trainer installed in %s", time.Since(start).Round(100*time.Millisecond))
		c := framework.Client(t, cfg)
		ns := framework.NamespaceFrom(ctx)
		const name = "llm"
		js := &jobsetv1alpha2.JobSet{}
		js.Namespace, js.Name = ns, name
		defer func() {
			if t.Failed() {
				framework.DumpNamespace(context.WithoutCancel(ctx), t, c, ns)
			}
		}()
		stopRecords := recordPods(ctx, c, js, 2)
		gangs := watchPodGroups(ctx, c, ns)
		run := time.Now()
		rt := framework.TrainingRuntimeFrom(t, filepath.Join("testdata", "initializers-barrier-runtime.yaml"), ns, nil)
		tj := framework.TrainJob(ns, name, rt.GetName())
		framework.CreateTrainJob(ctx, t, c, rt, tj)
		framework.WaitTrainJob(ctx, t, c, tj, "Complete", storyTimeout)
		t.Logf("TrainJob %s complete %s after its creation", name, time.Since(run).Round(100*time.Millisecond))
		recs := stopRecords()
		seen := gangs()
		preciseStarts(ctx, t, recs)
		logRecords(t, recs)

		// The start barrier: a group per stage, every pod through it.
		initializers := group(recs, "0", func(r *podRecord) bool { return r.rjob != "node" })
		nodes := group(recs, "0", func(r *podRecord) bool { return r.rjob == "node" })
		checkLinedUp(t, "stage initializers", initializers, 2)
		checkLinedUp(t, "stage node", nodes, 2)
		for _, r := range recs {
			if r.barrierExit != 0 || r.openSeen.IsZero() || r.exitCode != 0 {
				t.Errorf("pod %s: barrier exit %d (%q), told open: %t, main exit %d (%q): want through the barrier and succeeded",
					r.name, r.barrierExit, r.barrierMessage, !r.openSeen.IsZero(), r.exitCode, r.message)
			}
		}
		if err := c.Get(ctx, client.ObjectKeyFromObject(js), js); err != nil {
			t.Fatal(err)
		}
		if reasons, err := framework.EventReasons(ctx, c, js); err != nil {
			t.Fatal(err)
		} else if n := reasons["StartBarrierTimedOut"]; n > 0 {
			t.Errorf("%d StartBarrierTimedOut Events", n)
		}
		framework.WaitEventCounts(ctx, t, c, js, map[string]int{"StartBarrierOpened": 2})

		all := pods(ctx, t, c, js)
		checkCheckpoints(ctx, t, c, all, name)
		checkInitializerClaims(ctx, t, c, all)
		checkGangs(t, all, seen, name)
		return ctx
	})
	testenv.Test(t, f)
}

// checkCheckpoints: each node pod mounted its own checkpoint PVC, which is Bound, was bound for
// the node the pod ran on (WaitForFirstConsumer: the scheduler's choice), outlives the completed
// TrainJob (whenComplete: Retain), and the pod wrote into it.
func checkCheckpoints(ctx context.Context, t *testing.T, c client.Client, all []corev1.Pod, name string) {
	t.Helper()
	n := 0
	for i := range all {
		p := &all[i]
		if p.Labels[contract.ReplicatedJobNameLabelKey] != "node" {
			continue
		}
		n++
		idx := p.Annotations["batch.kubernetes.io/job-completion-index"]
		want := "checkpoint-" + name + "-node-0-" + idx
		mounted := false
		for _, v := range p.Spec.Volumes {
			mounted = mounted || v.Name == "checkpoint" && v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == want
		}
		if !mounted {
			t.Errorf("node pod %s does not mount its PVC %s: %+v", p.Name, want, p.Spec.Volumes)
		}
		var pvc corev1.PersistentVolumeClaim
		if err := c.Get(ctx, client.ObjectKey{Namespace: p.Namespace, Name: want}, &pvc); err != nil {
			t.Errorf("checkpoint PVC of %s: %v", p.Name, err)
			continue
		}
		if on := pvc.Annotations["volume.kubernetes.io/selected-node"]; pvc.Status.Phase != corev1.ClaimBound || on == "" || on != p.Spec.NodeName {
			t.Errorf("PVC %s: phase %s, selected node %q: want Bound for %s, the node its pod ran on", want, pvc.Status.Phase, on, p.Spec.NodeName)
		}
		if l := logs(ctx, t, p); !strings.Contains(l, fmt.Sprintf("checkpoint alpaca qwen %s", idx)) {
			t.Errorf("node pod %s did not read the initializers' data and write its checkpoint: %q", p.Name, l)
		}
	}
	if n != 2 {
		t.Errorf("%d node pods, want 2", n)
	}
}

// checkInitializerClaims: each initializer Job's claim was made (and retained), and its pod's
// container saw the claim's device: the DRA driver prepared it on the pod's node, and its CDI
// environment names the claim. (The allocation itself is gone by now: the claim is released once
// no pod uses it.)
func checkInitializerClaims(ctx context.Context, t *testing.T, c client.Client, all []corev1.Pod) {
	t.Helper()
	n := 0
	for i := range all {
		p := &all[i]
		if p.Labels[contract.ReplicatedJobNameLabelKey] == "node" {
			continue
		}
		n++
		want := p.Labels["batch.kubernetes.io/job-name"] + "-gpu"
		var claim resourcev1.ResourceClaim
		if err := c.Get(ctx, client.ObjectKey{Namespace: p.Namespace, Name: want}, &claim); err != nil {
			t.Errorf("claim of %s: %v", p.Name, err)
			continue
		}
		if l := logs(ctx, t, p); !strings.Contains(l, "on claim "+p.Namespace+"/"+want) {
			t.Errorf("initializer pod %s did not see its claim %s: %q", p.Name, want, l)
		}
	}
	if n != 2 {
		t.Errorf("%d initializer pods, want 2", n)
	}
}

// watchPodGroups polls the coscheduling PodGroups of ns (podgroups deletes a stage's gang once
// the stage is done); the returned func stops it and returns each PodGroup seen, by name, with
// its minMember.
func watchPodGroups(ctx context.Context, c client.Client, ns string) (stop func() map[string]int32) {
	var mu sync.Mutex
	seen := map[string]int32{}
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		for {
			var l coschedv1alpha1.PodGroupList
			if err := c.List(ctx, &l, client.InNamespace(ns)); err == nil {
				mu.Lock()
				for _, pg := range l.Items {
					seen[pg.Name] = pg.Spec.MinMember
				}
				mu.Unlock()
			}
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	return func() map[string]int32 {
		close(done)
		<-stopped
		mu.Lock()
		defer mu.Unlock()
		return seen
	}
}

// checkGangs: each stage had its gang of its 2 pods, and every pod was in its stage's gang and
// bound by the coscheduling scheduler.
func checkGangs(t *testing.T, all []corev1.Pod, seen map[string]int32, name string) {
	t.Helper()
	for stage := range 2 {
		pg := fmt.Sprintf("%s-stage-%d", name, stage)
		if seen[pg] != 2 {
			t.Errorf("PodGroup %s: minMember %d (seen: %v), want one of 2 pods", pg, seen[pg], seen)
		}
	}
	for _, p := range all {
		stage := 0
		if p.Labels[contract.ReplicatedJobNameLabelKey] == "node" {
			stage = 1
		}
		if want := fmt.Sprintf("%s-stage-%d", name, stage); p.Labels[contract.CoschedulingPodGroupLabelKey] != want ||
			p.Spec.SchedulerName != kindbed.CoschedulingSchedulerName || p.Spec.NodeName == "" {
			t.Errorf("pod %s: gang %q, scheduler %q, node %q: want gang %s bound by %s", p.Name,
				p.Labels[contract.CoschedulingPodGroupLabelKey], p.Spec.SchedulerName, p.Spec.NodeName, want, kindbed.CoschedulingSchedulerName)
		}
	}
}
