package kueue_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	coschedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"github.com/jobset-addons/jobset-addons/e2e/framework"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// TestGangs: two gang-scheduled JobSets of 4 pods of 20 CPUs each, created together; a testbed
// node has 32 CPUs, so the cluster holds one such gang (one pod a node), and a ClusterQueue of
// 80 CPUs fits one. Kueue admits one at a time and the gang scheduler binds all of its pods;
// the other waits suspended, none of its pods created, then runs. Nothing deadlocks (two
// half-bound gangs), at most one gang is bound at any time, and each JobSet has exactly one
// PodGroup, podgroups' (Kueue makes none): no second gang. For coscheduling (a second
// scheduler) and kube-scheduler's Workload API.
func TestGangs(t *testing.T) {
	for _, s := range []contract.Scheduler{contract.SchedulerCoscheduling, contract.SchedulerKubernetes} {
		testenv.Test(t, feature("gangs-"+string(s), "Kueue admits one gang at a time, the gang scheduler binds it whole",
			func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
				c := framework.Client(t, cfg)
				ns := framework.NamespaceFrom(ctx)
				q := makeQueues(ctx, t, c, ns, queueOptions{cpu: "80"})
				mk := func(name string) *jobsetv1alpha2.JobSet {
					// One gang: init (1 pod) and train (1 Job of 3 pods), together.
					return shape{name: name, queue: q.localQueue, scheduler: s, initRun: "3s", trainRun: "3s", trainJobs: 1, trainPods: 3, cpu: "20"}.jobSet(ns)
				}
				a, b := mk("a"), mk("b")

				// Watch how many of the gangs' pods are bound at once.
				var mu sync.Mutex
				maxBound := 0
				watchCtx, stop := context.WithCancel(ctx)
				var wg sync.WaitGroup
				wg.Go(func() {
					_ = wait.PollUntilContextCancel(watchCtx, 50*time.Millisecond, true, func(ctx context.Context) (bool, error) {
						var list corev1.PodList
						if err := c.List(ctx, &list, client.InNamespace(ns)); err != nil {
							return false, nil
						}
						n := 0
						for _, p := range list.Items {
							if bound(&p) && p.Status.Phase != corev1.PodSucceeded && p.DeletionTimestamp == nil {
								n++
							}
						}
						mu.Lock()
						maxBound = max(maxBound, n)
						mu.Unlock()
						return false, nil
					})
				})
				framework.CreateAll(ctx, t, c, a, b)
				jobSetDone(ctx, t, c, a, 2*time.Minute)
				jobSetDone(ctx, t, c, b, 2*time.Minute)
				stop()
				wg.Wait()
				mu.Lock()
				if maxBound > 4 {
					t.Errorf("%d pods bound at once: more than one gang of 4", maxBound)
				}
				mu.Unlock()

				// Kueue ran them one after the other.
				wa, wb := waitWorkload(ctx, t, c, a, "Finished", time.Minute), waitWorkload(ctx, t, c, b, "Finished", time.Minute)
				firstWL, secondWL := wa, wb
				if conditionTime(wb, "QuotaReserved").Before(conditionTime(wa, "QuotaReserved")) {
					firstWL, secondWL = wb, wa
				}
				if conditionTime(secondWL, "QuotaReserved").Before(conditionTime(firstWL, "Finished")) {
					t.Errorf("both Workloads held quota at once: %s reserved at %s, %s finished at %s", secondWL.GetName(),
						conditionTime(secondWL, "QuotaReserved"), firstWL.GetName(), conditionTime(firstWL, "Finished"))
				}
				for _, js := range []*jobsetv1alpha2.JobSet{a, b} {
					checkOneGang(ctx, t, c, js, s)
				}
				return ctx
			}))
	}
}

// checkOneGang checks that every pod of the finished JobSet named one gang, the JobSet's own,
// was bound by the backend's scheduler, and that podgroups made exactly one PodGroup (told by
// one PodGroupCreated Event), gone now that the JobSet finished, and that the namespace holds
// no other PodGroup.
func checkOneGang(ctx context.Context, t *testing.T, c client.Client, js *jobsetv1alpha2.JobSet, s contract.Scheduler) {
	t.Helper()
	ps, err := pods(ctx, c, js)
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 4 {
		t.Errorf("JobSet %s: %d pods, want 4", js.Name, len(ps))
	}
	for _, p := range ps {
		var gang string
		switch s {
		case contract.SchedulerCoscheduling:
			gang = p.Labels[contract.CoschedulingPodGroupLabelKey]
			if p.Spec.SchedulerName != framework.CoschedulingSchedulerName {
				t.Errorf("pod %s: schedulerName %q", p.Name, p.Spec.SchedulerName)
			}
		case contract.SchedulerKubernetes:
			if sg := p.Spec.SchedulingGroup; sg != nil {
				gang = ptr.Deref(sg.PodGroupName, "")
			}
		}
		if gang != js.Name {
			t.Errorf("pod %s names gang %q, want %q", p.Name, gang, js.Name)
		}
		if p.Spec.NodeSelector["type"] != "kwok" {
			t.Errorf("pod %s: nodeSelector %v, want Kueue's flavor's type=kwok", p.Name, p.Spec.NodeSelector)
		}
	}
	framework.WaitEventCounts(ctx, t, c, js, map[string]int{"PodGroupCreated": 1, "PodGroupDeleted": 1})
	framework.Eventually(ctx, t, 30*time.Second, "no PodGroup left", func(ctx context.Context) (bool, string, error) {
		pgs, err := podGroups(ctx, c, js, s)
		return err == nil && len(pgs) == 0, fmt.Sprint(pgs, err), nil
	})
	if s == contract.SchedulerCoscheduling {
		// No one else's PodGroup either: Kueue makes none.
		var all coschedv1alpha1.PodGroupList
		if err := c.List(ctx, &all, client.InNamespace(js.Namespace)); err != nil {
			t.Fatal(err)
		}
		if names := slices.Collect(func(yield func(string) bool) {
			for _, pg := range all.Items {
				if pg.DeletionTimestamp == nil && !yield(pg.Name) {
					return
				}
			}
		}); len(names) > 0 {
			t.Errorf("PodGroups left in the namespace: %v", names)
		}
	}
}
