package sequencer_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/e2e/framework"
	"github.com/jobset-addons/jobset-addons/pkg/addon/addontest"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// TestStartBarrierStages: InOrder a (1 pod) then b (2 Jobs of 1 pod), a barrier per stage. a's
// barrier opens alone; b's pods, gated until a completes, then wait for each other at theirs:
// two barriers opened, in order, and b's never before both its pods wait.
func TestStartBarrierStages(t *testing.T) {
	f := framework.NamespacedFeature("a start barrier per stage", "each stage's pods wait for each other, after the stage is released", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		c := framework.Client(t, cfg)
		js := withBarrier(addontest.JobSet(framework.NamespaceFrom(ctx), "staged"), contract.StartBarrierStage, "").InOrder().
			ReplicatedJobs(replicated("a", 1, 1, "2s"), replicated("b", 2, 1, "2s")).Obj()
		bw := startBarrierWatch(ctx, c, js, func(rj string) string { return rj })
		w := startWatch(ctx, t, c, js, sequence{pods: map[string]int{"a": 1, "b": 2}, deps: map[string][]dep{"b": {{"a", contract.DependencyComplete}}}})
		framework.CreateAll(ctx, t, c, js)
		w.complete(ctx, t, c, js, "b/0")
		bw.finish(t)
		if got := openedAnnotation(t, js); got.RestartAttempt != 0 || !slices.Equal(got.Groups, []string{"stage-0", "stage-1"}) {
			t.Errorf("opened annotation %+v, want attempt 0, stage-0 then stage-1", got)
		}
		opened := eventsSaying(ctx, t, c, js, "StartBarrierOpened", 2)
		if len(opened) != 2 || !strings.HasPrefix(opened[0], "Opened start barrier stage-0 (restart attempt 0): 1 pods") ||
			!strings.HasPrefix(opened[1], "Opened start barrier stage-1 (restart attempt 0): 2 pods") {
			t.Errorf("StartBarrierOpened %q", opened)
		}
		return ctx
	})
	testenv.Test(t, f)
}

// TestStartBarrierRestart: the pods of the first attempt fail once they run; the JobSet
// restarts, and the new attempt's pods get a barrier of their own, opened again.
func TestStartBarrierRestart(t *testing.T) {
	f := framework.NamespacedFeature("a start barrier after a restart", "the new attempt waits for its own pods", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		c := framework.Client(t, cfg)
		js := withBarrier(addontest.JobSet(framework.NamespaceFrom(ctx), "again"), contract.StartBarrierJobSet, "").MaxRestarts(1).
			ReplicatedJobs(replicated("w", 2, 1, "1s").PodAnnotation(framework.FailFirstAttemptAnnotationKey, "true")).Obj()
		bw := startBarrierWatch(ctx, c, js, func(string) string { return "jobset" })
		framework.CreateAll(ctx, t, c, js)
		waitFinished(ctx, t, c, js)
		bw.finish(t)
		if js.Status.Restarts != 1 {
			t.Errorf("restarts %d, want 1", js.Status.Restarts)
		}
		if got := openedAnnotation(t, js); got.RestartAttempt != 1 || !slices.Equal(got.Groups, []string{"jobset"}) {
			t.Errorf("opened annotation %+v, want attempt 1, jobset", got)
		}
		opened := eventsSaying(ctx, t, c, js, "StartBarrierOpened", 2)
		if len(opened) != 2 || !strings.HasPrefix(opened[0], "Opened start barrier jobset (restart attempt 0): 2 pods") ||
			!strings.HasPrefix(opened[1], "Opened start barrier jobset (restart attempt 1): 2 pods") {
			t.Errorf("StartBarrierOpened %q", opened)
		}
		return ctx
	})
	testenv.Test(t, f)
}

// TestStartBarrierTimeout: one pod can never be placed. After the 4 s timeout the waiting pods
// fail, their barrier container's message and the StartBarrierTimedOut Event naming the missing
// pod; the JobSet fails (no restarts).
func TestStartBarrierTimeout(t *testing.T) {
	f := framework.NamespacedFeature("a start barrier that times out", "the waiting pods fail naming the missing one", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		c := framework.Client(t, cfg)
		js := withBarrier(addontest.JobSet(framework.NamespaceFrom(ctx), "stuck"), contract.StartBarrierJobSet, "4s").
			ReplicatedJobs(replicated("w", 1, 2, "1s"), heldBack(replicated("never", 1, 1, "1s"), "nowhere")).Obj()
		// The pods as last seen (every 50 ms): a failed JobSet's pods may be deleted.
		var mu sync.Mutex
		last := map[string]corev1.Pod{}
		stop := framework.PollPods(ctx, c, func(pods []corev1.Pod) {
			mu.Lock()
			defer mu.Unlock()
			for _, p := range pods {
				last[p.Name] = p
			}
		}, client.InNamespace(js.Namespace), client.MatchingLabels{contract.JobSetNameLabelKey: js.Name})
		framework.CreateAll(ctx, t, c, js)
		framework.WaitJobSet(ctx, t, c, js, jobsetv1alpha2.JobSetFailed)
		time.Sleep(200 * time.Millisecond)
		stop()
		mu.Lock()
		defer mu.Unlock()
		var missing string
		var seen []corev1.Pod
		for _, p := range last {
			seen = append(seen, p)
			if p.Labels[contract.ReplicatedJobNameLabelKey] == "never" {
				missing = p.Name
			}
		}
		if missing == "" {
			t.Fatal("never's pod was not seen")
		}
		want := fmt.Sprintf("1 of 3 pods not at the barrier: %s (not scheduled)", missing)
		failed := 0
		for _, p := range seen {
			if p.Labels[contract.ReplicatedJobNameLabelKey] != "w" {
				continue
			}
			if !strings.HasPrefix(barrierState(&p), contract.StartBarrierFailedPrefix+"timed out after 4s") || !strings.Contains(barrierState(&p), want) {
				t.Errorf("%s: barrier state %q, want it to say %q", p.Name, barrierState(&p), want)
			}
			for _, s := range p.Status.InitContainerStatuses {
				if s.Name == contract.StartBarrierContainerName && s.State.Terminated != nil && s.State.Terminated.ExitCode != 0 &&
					strings.Contains(s.State.Terminated.Message, want) {
					failed++
				}
			}
		}
		if failed != 2 {
			t.Errorf("%d of w's pods failed at the barrier with the missing pod's name, want 2", failed)
		}
		events := eventsSaying(ctx, t, c, js, "StartBarrierTimedOut", 1)
		if len(events) != 1 || !strings.Contains(events[0], "timed out after 4s: 2 waiting pods failed") || !strings.Contains(events[0], want) {
			t.Errorf("StartBarrierTimedOut %q, want it to say %q", events, want)
		}
		cond := apimeta.FindStatusCondition(js.Status.Conditions, string(jobsetv1alpha2.JobSetFailed))
		t.Logf("JobSet failed: %s", cond.Message)
		return ctx
	})
	testenv.Test(t, f)
}

// TestStartBarrierRefused: what cannot work is refused at admission, each with its field path.
func TestStartBarrierRefused(t *testing.T) {
	base := func(ns string) *jobSet {
		return withBarrier(addontest.JobSet(ns, "bad"), contract.StartBarrierJobSet, "").ReplicatedJobs(replicated("a", 1, 1, "1s"), replicated("b", 1, 1, "1s"))
	}
	podSpec := func(i int) string { return fmt.Sprintf("spec.replicatedJobs[%d].template.spec.template.spec", i) }
	cases := []struct {
		name      string
		build     func(j *jobSet)
		wantPaths []string
	}{
		{"unknown value", func(j *jobSet) { j.Annotation(contract.StartBarrierAnnotationKey, "Pod") },
			[]string{"metadata.annotations[sequencer.jobset-addons.io/start-barrier]"}},
		{"bad timeout", func(j *jobSet) { j.Annotation(contract.StartBarrierTimeoutAnnotationKey, "-5m") },
			[]string{"metadata.annotations[sequencer.jobset-addons.io/start-barrier-timeout]"}},
		{"pods that never all run at once", func(j *jobSet) {
			j.Spec.ReplicatedJobs[1].Template.Spec.Parallelism = ptr.To[int32](2)
			j.Spec.ReplicatedJobs[1].Template.Spec.Completions = ptr.To[int32](8)
		}, []string{"spec.replicatedJobs[1].template.spec.parallelism"}},
		{"a container named like the barrier", func(j *jobSet) {
			j.Spec.ReplicatedJobs[0].Template.Spec.Template.Spec.Containers[0].Name = contract.StartBarrierContainerName
		}, []string{podSpec(0) + ".containers[0].name"}},
		{"a volume named like the barrier", func(j *jobSet) {
			j.Spec.ReplicatedJobs[1].Template.Spec.Template.Spec.Volumes = []corev1.Volume{{Name: contract.StartBarrierContainerName,
				VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
		}, []string{podSpec(1) + ".volumes[0].name"}},
		{"opened written by the user", func(j *jobSet) {
			j.Annotation(contract.StartBarrierOpenedAnnotationKey, `{"restartAttempt":0,"groups":["jobset"]}`)
		}, []string{"metadata.annotations[sequencer.jobset-addons.io/start-barrier-opened]"}},
	}
	f := features.New("a start barrier that cannot work is refused").WithSetup("namespace", framework.Namespace)
	for _, tc := range cases {
		f = f.Assess(tc.name, func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			c := framework.Client(t, cfg)
			j := base(framework.NamespaceFrom(ctx))
			tc.build(j)
			framework.ExpectRefusedAt(ctx, t, c, j.Obj(), "vjobset.sequencer.jobset-addons.io", tc.wantPaths)
			return ctx
		})
	}
	testenv.Test(t, f.Teardown(framework.DeleteNamespace).Feature())
}

// TestStartBarrierSequencerKilled: the sequencer is killed (SIGKILL) while pods wait at a
// barrier. The last pod reaches it while the sequencer is away: nothing opens it. Started again,
// the sequencer opens it from the pods' state alone; killed again once it opened, the JobSet
// completes and the opening is told once.
func TestStartBarrierSequencerKilled(t *testing.T) {
	framework.NeedsLocalAddon(t)
	f := framework.NamespacedFeature("the sequencer killed while pods wait at a barrier", "it comes back and opens it, never early", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		c := framework.Client(t, cfg)
		ns := framework.NamespaceFrom(ctx)
		k := newSequencerKiller(ctx, t, c)
		stop, start := func() { t.Helper(); k.stop(t) }, func() { t.Helper(); k.start(t) }
		defer k.restore(t) // leave the sequencer running for the next tests

		js := withBarrier(addontest.JobSet(ns, "killed-barrier"), contract.StartBarrierJobSet, "").ReplicatedJobs(
			replicated("early", 1, 2, "3s"), heldBack(replicated("late", 1, 1, "3s"), ns)).Obj()
		bw := startBarrierWatch(ctx, c, js, func(string) string { return "jobset" })
		framework.CreateAll(ctx, t, c, js)
		framework.Eventually(ctx, t, time.Minute, "early's pods at the barrier", func(ctx context.Context) (bool, string, error) {
			return countPods(jobSetPods(ctx, t, c, js), barrierWaiting) == 2, "", nil
		})
		stop()
		labelNode(ctx, t, c, ns)
		framework.Eventually(ctx, t, time.Minute, "every pod at the barrier", func(ctx context.Context) (bool, string, error) {
			return countPods(jobSetPods(ctx, t, c, js), barrierWaiting) == 3, "", nil
		})
		time.Sleep(2 * time.Second)
		if n := countPods(jobSetPods(ctx, t, c, js), func(p *corev1.Pod) bool { return barrierState(p) != "" }); n != 0 {
			t.Errorf("%d pods told while the sequencer was away", n)
		}
		start()
		framework.Eventually(ctx, t, time.Minute, "the barrier opened", func(ctx context.Context) (bool, string, error) {
			if err := c.Get(ctx, client.ObjectKeyFromObject(js), js); err != nil {
				return false, "", err
			}
			return openedAnnotation(t, js).Has("jobset"), "", nil
		})
		eventsSaying(ctx, t, c, js, "StartBarrierOpened", 1)
		stop()
		start()
		waitFinished(ctx, t, c, js)
		bw.finish(t)
		time.Sleep(time.Second)
		if opened := eventsSaying(ctx, t, c, js, "StartBarrierOpened", 1); len(opened) != 1 {
			t.Errorf("StartBarrierOpened told %d times: %q", len(opened), opened)
		}
		return ctx
	})
	testenv.Test(t, f)
}

// TestStartBarrierNewPod: once a barrier is open, a pod that comes later in the same attempt (a
// Job's retry of a deleted pod here; an elastic scale-up or a RestartJob's new Job alike) is
// told open as soon as it is seen, without waiting for anyone.
func TestStartBarrierNewPod(t *testing.T) {
	f := framework.NamespacedFeature("a new pod of an open barrier", "is told open at once", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		c := framework.Client(t, cfg)
		js := withBarrier(addontest.JobSet(framework.NamespaceFrom(ctx), "newpod"), contract.StartBarrierJobSet, "").
			ReplicatedJobs(replicated("w", 1, 2, "20s").BackoffLimit(ptr.To[int32](1))).Obj()
		framework.CreateAll(ctx, t, c, js)
		var first corev1.Pod
		framework.Eventually(ctx, t, time.Minute, "both pods running", func(ctx context.Context) (bool, string, error) {
			pods := jobSetPods(ctx, t, c, js)
			if countPods(pods, func(p *corev1.Pod) bool {
				return p.Status.Phase == corev1.PodRunning && barrierState(p) == contract.StartBarrierOpen
			}) != 2 {
				return false, "", nil
			}
			first = pods[0]
			return true, "", nil
		})
		if err := c.Delete(ctx, &first); err != nil {
			t.Fatal(err)
		}
		framework.Eventually(ctx, t, time.Minute, "the new pod told open and running", func(ctx context.Context) (bool, string, error) {
			for _, p := range jobSetPods(ctx, t, c, js) {
				if p.UID != first.UID && p.Name != first.Name && p.DeletionTimestamp == nil && attemptOf(&p) == 0 &&
					p.CreationTimestamp.After(first.CreationTimestamp.Time) {
					return barrierState(&p) == contract.StartBarrierOpen && p.Status.Phase == corev1.PodRunning, string(p.Status.Phase), nil
				}
			}
			return false, "no new pod yet", nil
		})
		if err := c.Get(ctx, client.ObjectKeyFromObject(js), js); err != nil {
			t.Fatal(err)
		}
		if got := openedAnnotation(t, js); got.RestartAttempt != 0 || !slices.Equal(got.Groups, []string{"jobset"}) {
			t.Errorf("opened annotation %+v, want attempt 0, jobset", got)
		}
		if opened := eventsSaying(ctx, t, c, js, "StartBarrierOpened", 1); len(opened) != 1 {
			t.Errorf("StartBarrierOpened %q, want one", opened)
		}
		return ctx
	})
	testenv.Test(t, f)
}

// TestStartBarrierNudge: both pods play a kubelet that lost the rewrite of "open" into their
// downwardAPI file (framework.BarrierDeafAnnotationKey: kwok keeps them at the barrier until a
// second change of the pod). The controller, seeing them still at the barrier after they were
// told, tells them again (contract.StartBarrierNudgeAnnotationKey); they start, the JobSet
// completes, and the barrier was opened once.
func TestStartBarrierNudge(t *testing.T) {
	f := framework.NamespacedFeature("a pod still at an open barrier", "is told again", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		c := framework.Client(t, cfg)
		js := withBarrier(addontest.JobSet(framework.NamespaceFrom(ctx), "nudged"), contract.StartBarrierJobSet, "").
			ReplicatedJobs(replicated("w", 2, 1, "1s").PodAnnotation(framework.BarrierDeafAnnotationKey, "true")).Obj()
		framework.CreateAll(ctx, t, c, js)
		var opened time.Time
		framework.Eventually(ctx, t, time.Minute, "both pods told open", func(ctx context.Context) (bool, string, error) {
			pods := jobSetPods(ctx, t, c, js)
			if n := countPods(pods, func(p *corev1.Pod) bool { return barrierState(p) == contract.StartBarrierOpen }); n != 2 {
				return false, fmt.Sprintf("%d of 2 told open", n), nil
			}
			opened = time.Now()
			return true, "", nil
		})
		nudged := map[string]time.Time{}
		framework.Eventually(ctx, t, time.Minute, "both pods told again", func(ctx context.Context) (bool, string, error) {
			for _, p := range jobSetPods(ctx, t, c, js) {
				if v := p.Annotations[contract.StartBarrierNudgeAnnotationKey]; v != "" {
					at, err := time.Parse(time.RFC3339Nano, v)
					if err != nil {
						return false, "", fmt.Errorf("pod %s: nudge annotation %q: %w", p.Name, v, err)
					}
					nudged[p.Name] = at
				}
			}
			return len(nudged) == 2, fmt.Sprintf("%d of 2 told again", len(nudged)), nil
		})
		for name, at := range nudged {
			// NudgeAfter (5 s) after the controller saw the pod told; the poll saw it told a little
			// after the controller did.
			if d := at.Sub(opened); d < 3*time.Second {
				t.Errorf("pod %s told again %v after it was seen told open, want about 5 s (NudgeAfter)", name, d)
			} else {
				t.Logf("pod %s told again %v after it was seen told open", name, d.Round(time.Millisecond))
			}
		}
		waitFinished(ctx, t, c, js) // Completed: held without the second telling, it never would
		if got := eventsSaying(ctx, t, c, js, "StartBarrierOpened", 1); len(got) != 1 {
			t.Errorf("StartBarrierOpened %q, want one", got)
		}
		return ctx
	})
	testenv.Test(t, f)
}
