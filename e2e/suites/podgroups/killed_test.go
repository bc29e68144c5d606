package podgroups_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/e2e/framework"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// TestKilled: podgroups is killed (SIGKILL) while stage 0 of a sequenced JobSet runs, and stays
// down while the sequencer releases stage 1: stage 1's pods wait for their PodGroup rather than
// run ungrouped. Started again, it makes stage 1's PodGroup, deletes stage 0's, and the JobSet
// completes leaving none.
func TestKilled(t *testing.T) {
	framework.NeedsLocalAddon(t)
	f := framework.NamespacedFeature("podgroups killed between two stages", "nothing lost", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		c := framework.Client(t, cfg)
		tb, err := framework.DefaultConfig()
		if err != nil {
			t.Fatal(err)
		}
		ns := framework.NamespaceFrom(ctx)
		js := newJobSet(ns, "crash", contract.SchedulerVolcano).
			InOrder().
			ReplicatedJobs(replicated("init", 1, 1, "3s"), replicated("main", 1, 2, "2s")).Obj()
		framework.CreateAll(ctx, t, c, js)
		waitPodGroups(ctx, t, c, ns, js.Name, contract.SchedulerVolcano, "crash-stage-0")
		// Killed once its Event about stage 0 is written: an Event still in flight dies with a
		// SIGKILL (Events are best effort), and the count below is about PodGroups.
		framework.Eventually(ctx, t, 30*time.Second, "stage 0's PodGroupCreated Event", func(ctx context.Context) (bool, string, error) {
			reasons, err := framework.EventReasons(ctx, c, js)
			return err == nil && reasons["PodGroupCreated"] == 1, fmt.Sprint(reasons), nil
		})
		// And once JobSet has made both Jobs: podgroups' Job webhook (failurePolicy Fail) refuses
		// a ganged Job while podgroups is down, and JobSet makes them at once, not by stage.
		framework.Eventually(ctx, t, 30*time.Second, "both Jobs made", func(ctx context.Context) (bool, string, error) {
			var jobs batchv1.JobList
			if err := c.List(ctx, &jobs, client.InNamespace(ns), client.MatchingLabels{contract.JobSetNameLabelKey: js.Name}); err != nil {
				return false, err.Error(), nil
			}
			return len(jobs.Items) == 2, fmt.Sprintf("%d Jobs", len(jobs.Items)), nil
		})
		if err := framework.KillAddon(tb, addonName); err != nil {
			t.Fatal(err)
		}
		restarted := false
		defer func() {
			if !restarted { // leave podgroups running for the next tests
				_ = framework.StartAddon(ctx, tb, addonName, func(ctx context.Context) error { return probe(ctx, c) }, addonArgs...)
			}
		}()
		// The sequencer releases main; its pods exist, ungated, and wait for their PodGroup.
		framework.Eventually(ctx, t, time.Minute, "main released, its pods unbound", func(ctx context.Context) (bool, string, error) {
			if err := c.Get(ctx, client.ObjectKeyFromObject(js), js); err != nil {
				return false, err.Error(), nil
			}
			released := 0
			for _, p := range pods(ctx, t, c, ns, js.Name) {
				if p.Labels[contract.ReplicatedJobNameLabelKey] == "main" && len(p.Spec.SchedulingGates) == 0 {
					released++
					if p.Spec.NodeName != "" {
						return false, "", fmt.Errorf("pod %s of main was bound without its PodGroup", p.Name)
					}
				}
			}
			return released == 2, js.Annotations[contract.ReleasedAnnotationKey], nil
		})
		time.Sleep(3 * time.Second)
		if n := bound(mainPods(ctx, t, c, ns, js.Name)); n > 0 {
			t.Fatalf("%d pods of main bound while podgroups was down", n)
		}
		if err := framework.StartAddon(ctx, tb, addonName, func(ctx context.Context) error { return probe(ctx, c) }, addonArgs...); err != nil {
			t.Fatal(err)
		}
		restarted = true
		framework.WaitJobSet(ctx, t, c, js, jobsetv1alpha2.JobSetCompleted)
		waitPodGroups(ctx, t, c, ns, js.Name, contract.SchedulerVolcano)
		framework.WaitEventCounts(ctx, t, c, js, map[string]int{"PodGroupCreated": 2, "PodGroupDeleted": 2})
		return ctx
	})
	testenv.Test(t, f)
}

// mainPods are the pods of the ReplicatedJob main.
func mainPods(ctx context.Context, t *testing.T, c client.Client, ns, jobSet string) []corev1.Pod {
	t.Helper()
	var out []corev1.Pod
	for _, p := range pods(ctx, t, c, ns, jobSet) {
		if p.Labels[contract.ReplicatedJobNameLabelKey] == "main" {
			out = append(out, p)
		}
	}
	return out
}
