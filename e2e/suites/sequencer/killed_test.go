package sequencer_test

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/jobset-addons/jobset-addons/e2e/framework"
	"github.com/jobset-addons/jobset-addons/pkg/addon/addontest"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// TestSequencerKilled: the sequencer is killed (SIGKILL) twice in the middle of a sequence. Started again
// while a still runs, it does not release b before a completes; killed after releasing b, c
// stays gated after b completes until it is back, then c is released once, and the JobSet
// completes.
func TestSequencerKilled(t *testing.T) {
	framework.NeedsLocalAddon(t)
	f := framework.NamespacedFeature("the sequencer killed mid-sequence", "it comes back and finishes, never early", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		c := framework.Client(t, cfg)
		k := newSequencerKiller(ctx, t, c)
		stop, start := func() { t.Helper(); k.stop(t) }, func() { t.Helper(); k.start(t) }
		defer k.restore(t) // leave the sequencer running for the next tests

		js := addontest.JobSet(framework.NamespaceFrom(ctx), "killed").InOrder().
			ReplicatedJobs(replicated("a", 1, 1, "15s"), replicated("b", 2, 1, "4s"), replicated("c", 1, 1, "1s")).Obj()
		pods := func(rj string) []corev1.Pod {
			var list corev1.PodList
			if err := c.List(ctx, &list, client.InNamespace(js.Namespace), client.MatchingLabels{contract.JobSetNameLabelKey: js.Name, contract.ReplicatedJobNameLabelKey: rj}); err != nil {
				t.Fatal(err)
			}
			return list.Items
		}
		count := func(list []corev1.Pod, ok func(*corev1.Pod) bool) int {
			n := 0
			for i := range list {
				if ok(&list[i]) {
					n++
				}
			}
			return n
		}
		w := startWatch(ctx, t, c, js, sequence{
			pods: map[string]int{"a": 1, "b": 2, "c": 1},
			deps: map[string][]dep{"b": {{"a", contract.DependencyComplete}}, "c": {{"b", contract.DependencyComplete}}},
		})
		framework.CreateAll(ctx, t, c, js)
		framework.Eventually(ctx, t, time.Minute, "b's pods gated", func(ctx context.Context) (bool, string, error) {
			return count(pods("b"), func(p *corev1.Pod) bool { return hasGate(p.Spec.SchedulingGates) }) == 2, "", nil
		})

		// Killed and back while a runs: b waits for a all the same.
		stop()
		time.Sleep(time.Second)
		start()
		if n := count(pods("a"), func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodSucceeded }); n != 0 {
			t.Fatalf("a finished while the sequencer was away; make a run longer")
		}

		// Killed once b is released: b completes meanwhile, c stays gated.
		framework.Eventually(ctx, t, time.Minute, "b released", func(ctx context.Context) (bool, string, error) {
			return count(pods("b"), func(p *corev1.Pod) bool { return p.Spec.NodeName != "" }) == 2, "", nil
		})
		// Its Event is sent asynchronously: a process killed right after the release may never
		// send it (Events are best effort). Kill once it is recorded, so that the count below
		// tells whether the restarted sequencer tells b's release again.
		expectEvents(ctx, t, c, js, "Released ReplicatedJob b (stage 1, restart attempt 0): a Complete")
		stop()
		framework.Eventually(ctx, t, time.Minute, "b Succeeded", func(ctx context.Context) (bool, string, error) {
			return count(pods("b"), func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodSucceeded }) == 2, "", nil
		})
		time.Sleep(2 * time.Second)
		if n := count(pods("c"), func(p *corev1.Pod) bool { return !hasGate(p.Spec.SchedulingGates) }); n != 0 {
			t.Errorf("%d pods of c released while the sequencer was away", n)
		}
		start()

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
