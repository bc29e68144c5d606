package sequencer_test

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/jobset-addons/jobset-addons/e2e/framework"
	"github.com/jobset-addons/jobset-addons/pkg/addon/addontest"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// TestReadyMode: with wait-for Ready, b runs once both Jobs of a are ready, while a still runs.
func TestReadyMode(t *testing.T) {
	f := framework.NamespacedFeature("wait-for Ready", "b runs beside a once a is ready", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		c := framework.Client(t, cfg)
		js := addontest.JobSet(framework.NamespaceFrom(ctx), "ready").InOrder().Annotation(contract.WaitForAnnotationKey, "Ready").
			ReplicatedJobs(replicated("a", 2, 2, "12s"), replicated("b", 1, 1, "1s")).Obj()
		w := startWatch(ctx, t, c, js, sequence{
			pods: map[string]int{"a": 4, "b": 1},
			deps: map[string][]dep{"b": {{"a", contract.DependencyReady}}},
		})
		framework.CreateAll(ctx, t, c, js)
		framework.Eventually(ctx, t, time.Minute, "b Succeeded while a runs", func(ctx context.Context) (bool, string, error) {
			var pods corev1.PodList
			if err := c.List(ctx, &pods, client.InNamespace(js.Namespace), client.MatchingLabels{contract.JobSetNameLabelKey: js.Name}); err != nil {
				return false, err.Error(), nil
			}
			phases := map[string][]corev1.PodPhase{}
			for _, p := range pods.Items {
				rj := p.Labels[contract.ReplicatedJobNameLabelKey]
				phases[rj] = append(phases[rj], p.Status.Phase)
			}
			if slices.Contains(phases["a"], corev1.PodSucceeded) {
				t.Fatalf("a finished before b ran: %v", phases)
			}
			return slices.Equal(phases["b"], []corev1.PodPhase{corev1.PodSucceeded}), "", nil
		})
		w.complete(ctx, t, c, js, "b/0")
		expectEvents(ctx, t, c, js, "Released ReplicatedJob b (stage 1, restart attempt 0): a Ready")
		return ctx
	})
	testenv.Test(t, f)
}

// TestThreeStageChain: a, then b, then c, each once the one before has completed.
func TestThreeStageChain(t *testing.T) {
	f := framework.NamespacedFeature("a three-stage chain", "each stage after the one before", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		c := framework.Client(t, cfg)
		js := addontest.JobSet(framework.NamespaceFrom(ctx), "chain").InOrder().
			ReplicatedJobs(replicated("a", 2, 1, "2s"), replicated("b", 1, 2, "2s"), replicated("c", 2, 1, "1s")).Obj()
		w := startWatch(ctx, t, c, js, sequence{
			pods: map[string]int{"a": 2, "b": 2, "c": 2},
			deps: map[string][]dep{"b": {{"a", contract.DependencyComplete}}, "c": {{"b", contract.DependencyComplete}}},
		})
		framework.CreateAll(ctx, t, c, js)
		w.complete(ctx, t, c, js, "b/0", "c/0")
		if r := released(t, js); !slices.Equal(r.ReplicatedJobs, []string{"b", "c"}) {
			t.Errorf("released annotation %+v, want b, c", r)
		}
		expectEvents(ctx, t, c, js, "Released ReplicatedJob b (stage 1, restart attempt 0): a Complete",
			"Released ReplicatedJob c (stage 2, restart attempt 0): b Complete")
		return ctx
	})
	testenv.Test(t, f)
}

// TestRestartMidSequence: b fails in the first attempt after a completed and b was released;
// JobSet restarts, and in the new attempt b waits again for the new a.
func TestRestartMidSequence(t *testing.T) {
	f := framework.NamespacedFeature("a restart in the middle of the sequence", "the sequence starts again", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		c := framework.Client(t, cfg)
		js := addontest.JobSet(framework.NamespaceFrom(ctx), "restart").InOrder().MaxRestarts(1).
			ReplicatedJobs(replicated("a", 1, 1, "2s"),
				replicated("b", 1, 1, "1s").PodAnnotation(framework.FailFirstAttemptAnnotationKey, "true"),
				replicated("c", 1, 1, "1s")).Obj()
		w := startWatch(ctx, t, c, js, sequence{
			pods: map[string]int{"a": 1, "b": 1, "c": 1},
			deps: map[string][]dep{"b": {{"a", contract.DependencyComplete}}, "c": {{"b", contract.DependencyComplete}}},
		})
		framework.CreateAll(ctx, t, c, js)
		w.complete(ctx, t, c, js, "b/0", "b/1", "c/1")
		if js.Status.Restarts != 1 {
			t.Errorf("restarts %d, want 1", js.Status.Restarts)
		}
		if r := released(t, js); r.RestartAttempt != 1 || !slices.Equal(r.ReplicatedJobs, []string{"b", "c"}) {
			t.Errorf("released annotation %+v, want b, c of attempt 1", r)
		}
		expectEvents(ctx, t, c, js, "Released ReplicatedJob b (stage 1, restart attempt 0)",
			"Released ReplicatedJob b (stage 1, restart attempt 1)", "Released ReplicatedJob c (stage 2, restart attempt 1)")
		return ctx
	})
	testenv.Test(t, f)
}

// TestSuspendResume: created suspended, nothing runs; resumed, the sequence runs. Suspended
// again once b is released, b's pods go and b's release is withdrawn (as when Kueue preempts
// the JobSet); resumed, b's new pods are released again within a second (a stays Complete) and
// c still waits for b.
func TestSuspendResume(t *testing.T) {
	f := framework.NamespacedFeature("suspend and resume", "nothing released while suspended", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		c := framework.Client(t, cfg)
		js := addontest.JobSet(framework.NamespaceFrom(ctx), "suspend").InOrder().
			ReplicatedJobs(replicated("a", 1, 1, "1s"), replicated("b", 2, 1, "6s"), replicated("c", 1, 1, "1s")).Obj()
		js.Spec.Suspend = ptr.To(true)
		w := startWatch(ctx, t, c, js, sequence{
			pods: map[string]int{"a": 1, "b": 2, "c": 1},
			deps: map[string][]dep{"b": {{"a", contract.DependencyComplete}}, "c": {{"b", contract.DependencyComplete}}},
		})
		framework.CreateAll(ctx, t, c, js)
		setSuspend := func(s bool) {
			t.Helper()
			err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
				if err := c.Get(ctx, client.ObjectKeyFromObject(js), js); err != nil {
					return err
				}
				js.Spec.Suspend = ptr.To(s)
				return c.Update(ctx, js)
			})
			if err != nil {
				t.Fatalf("suspend=%v: %v", s, err)
			}
		}
		podsOf := func(rj string) []corev1.Pod {
			var pods corev1.PodList
			if err := c.List(ctx, &pods, client.InNamespace(js.Namespace), client.MatchingLabels{contract.JobSetNameLabelKey: js.Name, contract.ReplicatedJobNameLabelKey: rj}); err != nil {
				t.Fatal(err)
			}
			return pods.Items
		}

		time.Sleep(3 * time.Second)
		if err := c.Get(ctx, client.ObjectKeyFromObject(js), js); err != nil {
			t.Fatal(err)
		}
		if _, ok := js.Annotations[contract.ReleasedAnnotationKey]; ok {
			t.Errorf("suspended, yet released: %v", js.Annotations)
		}
		for _, rj := range []string{"a", "b", "c"} {
			if n := len(podsOf(rj)); n > 0 {
				t.Errorf("suspended, yet %d pods of %s", n, rj)
			}
		}

		setSuspend(false)
		framework.Eventually(ctx, t, time.Minute, "b running", func(ctx context.Context) (bool, string, error) {
			running := 0
			for _, p := range podsOf("b") {
				if p.Status.Phase == corev1.PodRunning {
					running++
				}
			}
			return running == 2, "", nil
		})
		setSuspend(true)
		framework.Eventually(ctx, t, time.Minute, "b's pods gone while suspended", func(ctx context.Context) (bool, string, error) {
			return len(podsOf("b")) == 0, "", nil
		})
		resumed := time.Now()
		setSuspend(false)
		w.complete(ctx, t, c, js)
		slowest, n := w.slowestBinding("b", resumed)
		if n != 2 {
			t.Errorf("%d pods of b seen created and bound after the resume, want 2", n)
		}
		if slowest > 1500*time.Millisecond {
			t.Errorf("a new pod of the released b waited %s to be bound, want about a second at most", slowest)
		}
		if r := released(t, js); !slices.Equal(r.ReplicatedJobs, []string{"b", "c"}) {
			t.Errorf("released annotation %+v, want b, c", r)
		}
		expectEvents(ctx, t, c, js, "Released ReplicatedJob b", "Released ReplicatedJob b", "Released ReplicatedJob c")
		framework.WaitEventCounts(ctx, t, c, js, map[string]int{"StageReleasesWithdrawn": 1})
		return ctx
	})
	testenv.Test(t, f)
}
