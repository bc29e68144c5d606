package sequencer_test

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/e2e/framework"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// example reads a JobSet (and what comes with it) from examples/sequencer into namespace ns.
func example(t *testing.T, file, ns string) (*jobsetv1alpha2.JobSet, []client.Object) {
	t.Helper()
	return framework.Example(t, "sequencer", file, ns)
}

// TestKEP672Story: the Node pods of examples/sequencer/kep-672-initializer-then-node.yaml stay
// SchedulingGated until every Initializer pod has Succeeded, then they run.
func TestKEP672Story(t *testing.T) {
	f := framework.NamespacedFeature("KEP-672: initializer, then node", "node waits for the initializer", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		c := framework.Client(t, cfg)
		js, objs := example(t, "kep-672-initializer-then-node.yaml", framework.NamespaceFrom(ctx))
		runFor(js, "3s", "initializer")
		w := startWatch(ctx, t, c, js, sequence{
			pods: map[string]int{"initializer": 1, "node": 3},
			deps: map[string][]dep{"node": {{"initializer", contract.DependencyComplete}}},
		})
		framework.CreateAll(ctx, t, c, objs...)
		w.complete(ctx, t, c, js, "node/0")
		if r := released(t, js); !slices.Equal(r.ReplicatedJobs, []string{"node"}) || r.RestartAttempt != 0 {
			t.Errorf("released annotation %+v, want node in attempt 0", r)
		}
		expectEvents(ctx, t, c, js, "Released ReplicatedJob node (stage 1, restart attempt 0): initializer Complete")
		// The sequencer's metrics count it, with bounded labels.
		framework.ExpectMetrics(ctx, t, addonName,
			`jobset_addons_sequencer_replicatedjobs_released_total{status="Complete"}`,
			`jobset_addons_sequencer_pods_released_total`,
			`jobset_addons_sequencer_reconcile_duration_seconds_count{result="success"}`)
		return ctx
	})
	testenv.Test(t, f)
}

// TestFanIn: in examples/sequencer/kep-572-story2-fan-in.yaml node waits for both
// dataset-initializer and model-initializer: still gated when the first has completed, released
// once the second has.
func TestFanIn(t *testing.T) {
	f := framework.NamespacedFeature("KEP-572 story 2: fan-in", "node waits for both initializers", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		c := framework.Client(t, cfg)
		ns := framework.NamespaceFrom(ctx)
		js, objs := example(t, "kep-572-story2-fan-in.yaml", ns)
		runFor(js, "1s", "dataset-initializer")
		runFor(js, "6s", "model-initializer")
		w := startWatch(ctx, t, c, js, sequence{
			pods: map[string]int{"dataset-initializer": 1, "model-initializer": 1, "node": 1},
			deps: map[string][]dep{"node": {{"dataset-initializer", contract.DependencyComplete}, {"model-initializer", contract.DependencyComplete}}},
		})
		framework.CreateAll(ctx, t, c, objs...)

		// The first initializer done, the second not: node still gated.
		framework.Eventually(ctx, t, time.Minute, "dataset-initializer Succeeded", func(ctx context.Context) (bool, string, error) {
			var pods corev1.PodList
			if err := c.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{contract.ReplicatedJobNameLabelKey: "dataset-initializer"}); err != nil {
				return false, err.Error(), nil
			}
			return len(pods.Items) == 1 && pods.Items[0].Status.Phase == corev1.PodSucceeded, "", nil
		})
		var node corev1.PodList
		if err := c.List(ctx, &node, client.InNamespace(ns), client.MatchingLabels{contract.ReplicatedJobNameLabelKey: "node"}); err != nil {
			t.Fatal(err)
		}
		if len(node.Items) != 1 || !hasGate(node.Items[0].Spec.SchedulingGates) || node.Items[0].Spec.NodeName != "" {
			t.Errorf("with only dataset-initializer done, want the node pod gated; got %d pods: %+v", len(node.Items), node.Items)
		}

		w.complete(ctx, t, c, js, "node/0")
		expectEvents(ctx, t, c, js, "Released ReplicatedJob node (stage 1, restart attempt 0): dataset-initializer Complete, model-initializer Complete")
		return ctx
	})
	testenv.Test(t, f)
}
