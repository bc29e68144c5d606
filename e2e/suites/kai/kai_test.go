package kai_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/e2e/framework"
	"github.com/jobset-addons/jobset-addons/pkg/addon/jobsets"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// TestGang: on nodes with room for 3 pods, a KAI JobSet of 4 pods gets none bound; once room
// for 3 more is added, all 4 are bound together; when the JobSet completes, its PodGroup is
// deleted.
func TestGang(t *testing.T) {
	f := framework.NamespacedFeature("kai: all of the gang or none of it", "gang", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		c := framework.Client(t, cfg)
		ns := framework.NamespaceFrom(ctx)
		poolNode(ctx, t, cfg, ns, ns+"-a", 3)
		js := kaiJobSet(ns, "gang").ReplicatedJobs(inPool(replicated("w", 2, 2, "10s"), ns)).Obj()
		framework.CreateAll(ctx, t, c, js)
		name := "gang." + ns
		if got, want := spec(podGroup(ctx, t, c, ns, name)), "minMember 4, queue default-queue, subGroups [w=4]"; got != want {
			t.Errorf("PodGroup %s: %s, want %s", name, got, want)
		}
		ps := noneBound(ctx, t, c, ns, js.Name, 4, "only 3 of 4 fit")
		checkPods(t, ps, name, framework.KAIDefaultQueue)

		poolNode(ctx, t, cfg, ns, ns+"-b", 3)
		spread := allBound(ctx, t, c, ns, js.Name, 4)
		t.Logf("all 4 bound once there was room, their PodScheduled times within %s", spread)
		if spread > 3*time.Second {
			t.Errorf("the gang's pods were bound %s apart; want together", spread)
		}
		framework.WaitJobSet(ctx, t, c, js, jobsetv1alpha2.JobSetCompleted)
		waitPodGroups(ctx, t, c, ns, js.Name)
		framework.WaitEventCounts(ctx, t, c, js, map[string]int{"PodGroupCreated": 1, "PodGroupDeleted": 1})
		return ctx
	})
	testenv.Test(t, f)
}

// TestSubGroups: a JobSet of a launcher and workers, its workers with room and its launcher
// without: nothing starts (the launcher's subGroup holds the gang), and all start once the
// launcher has room. The PodGroup has a subGroup per ReplicatedJob of its pods.
func TestSubGroups(t *testing.T) {
	f := framework.NamespacedFeature("kai: a ReplicatedJob that cannot be placed holds back the others", "subgroups", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		c := framework.Client(t, cfg)
		ns := framework.NamespaceFrom(ctx)
		launchers, workers := ns+"-l", ns+"-w"
		poolNode(ctx, t, cfg, workers, workers+"-a", 8)
		js := kaiJobSet(ns, "mpi").ReplicatedJobs(
			inPool(replicated("launcher", 1, 1, "10s"), launchers),
			inPool(replicated("worker", 2, 3, "10s"), workers),
		).Obj()
		framework.CreateAll(ctx, t, c, js)
		name := "mpi." + ns
		if got, want := spec(podGroup(ctx, t, c, ns, name)), "minMember 7, queue default-queue, subGroups [launcher=1 worker=6]"; got != want {
			t.Errorf("PodGroup %s: %s, want %s", name, got, want)
		}
		ps := noneBound(ctx, t, c, ns, js.Name, 7, "the launcher has no room and the workers have")
		checkPods(t, ps, name, framework.KAIDefaultQueue)
		poolNode(ctx, t, cfg, launchers, launchers+"-a", 1)
		spread := allBound(ctx, t, c, ns, js.Name, 7)
		t.Logf("all 7 bound once the launcher had room, within %s", spread)
		framework.WaitJobSet(ctx, t, c, js, jobsetv1alpha2.JobSetCompleted)
		waitPodGroups(ctx, t, c, ns, js.Name)
		return ctx
	})
	testenv.Test(t, f)
}

// TestStages: a JobSet of an initializer then a trainer (the sequencer's InOrder): a PodGroup
// per stage, <jobset>-stage-<i>.<namespace>, each made once its stage may run and deleted once
// it finished; the JobSet completes and leaves none.
func TestStages(t *testing.T) {
	f := framework.NamespacedFeature("kai: one PodGroup per stage, each for as long as its stage runs", "stages", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		c := framework.Client(t, cfg)
		ns := framework.NamespaceFrom(ctx)
		poolNode(ctx, t, cfg, ns, ns+"-a", 8)
		js := kaiJobSet(ns, "train").InOrder().ReplicatedJobs(
			inPool(replicated("init", 1, 1, "3s"), ns),
			inPool(replicated("trainer", 2, 2, "3s"), ns),
		).Obj()
		framework.CreateAll(ctx, t, c, js)
		stage0, stage1 := "train-stage-0."+ns, "train-stage-1."+ns
		if got, want := spec(podGroup(ctx, t, c, ns, stage0)), "minMember 1, queue default-queue, subGroups [init=1]"; got != want {
			t.Errorf("PodGroup %s: %s, want %s", stage0, got, want)
		}
		var seen []string
		var sawStage1 bool
		framework.Eventually(ctx, t, 3*time.Minute, "JobSet completes", func(ctx context.Context) (bool, string, error) {
			names, err := podGroupNames(ctx, c, ns, js.Name)
			if err != nil {
				return false, err.Error(), nil
			}
			if key := strings.Join(names, ","); len(seen) == 0 || seen[len(seen)-1] != key {
				seen = append(seen, key)
			}
			if slices.Contains(names, stage1) && !sawStage1 {
				sawStage1 = true
				if got, want := spec(podGroup(ctx, t, c, ns, stage1)), "minMember 4, queue default-queue, subGroups [trainer=4]"; got != want {
					t.Errorf("PodGroup %s: %s, want %s", stage1, got, want)
				}
			}
			if err := c.Get(ctx, client.ObjectKeyFromObject(js), js); err != nil {
				return false, err.Error(), nil
			}
			return jobsets.Finished(js), fmt.Sprintf("PodGroups %v", names), nil
		})
		if js.Status.TerminalState != string(jobsetv1alpha2.JobSetCompleted) {
			t.Fatalf("JobSet ended %q, want Completed", js.Status.TerminalState)
		}
		t.Logf("PodGroups seen in turn: %q", seen)
		if !slices.Contains(seen, stage1) {
			t.Errorf("never saw stage 1's PodGroup alone (stage 0's deleted while stage 1 ran): %q", seen)
		}
		if slices.Index(seen, stage0) > slices.Index(seen, stage1) || seen[0] != stage0 {
			t.Errorf("PodGroups seen in turn %q: want stage 0's first, then stage 1's", seen)
		}
		waitPodGroups(ctx, t, c, ns, js.Name)
		framework.WaitEventCounts(ctx, t, c, js, map[string]int{"PodGroupCreated": 2, "PodGroupDeleted": 2})
		return ctx
	})
	testenv.Test(t, f)
}

// TestQueueMissing: a JobSet naming a queue that does not exist gets the Warning QueueMissing
// and its pods wait (KAI skips the PodGroup without a word); one naming a top-level queue gets
// QueueNotLeaf. Once the queue exists under a parent, the first JobSet's pods are bound.
func TestQueueMissing(t *testing.T) {
	f := framework.NamespacedFeature("kai: a queue KAI would skip is told", "queues", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		c := framework.Client(t, cfg)
		ns := framework.NamespaceFrom(ctx)
		poolNode(ctx, t, cfg, ns, ns+"-a", 8)
		queue := ns + "-queue"
		missing := kaiJobSet(ns, "missing").Annotation(contract.VolcanoQueueNameAnnotationKey, queue).
			ReplicatedJobs(inPool(replicated("w", 1, 2, "300s"), ns)).Obj()
		top := kaiJobSet(ns, "top").Annotation(contract.VolcanoQueueNameAnnotationKey, framework.KAIParentQueue).
			ReplicatedJobs(inPool(replicated("w", 1, 1, "300s"), ns)).Obj()
		framework.CreateAll(ctx, t, c, missing, top)
		msg := eventMessage(ctx, t, c, missing, "QueueMissing")
		t.Logf("QueueMissing: %s", msg)
		if !strings.Contains(msg, queue) {
			t.Errorf("QueueMissing does not name the queue %s: %s", queue, msg)
		}
		t.Logf("QueueNotLeaf: %s", eventMessage(ctx, t, c, top, "QueueNotLeaf"))
		ps := noneBound(ctx, t, c, ns, missing.Name, 2, "its queue does not exist")
		checkPods(t, ps, "missing."+ns, queue)
		createQueue(ctx, t, c, queue, framework.KAIParentQueue)
		allBound(ctx, t, c, ns, missing.Name, 2)
		if _, b := jobSetPods(ctx, t, c, ns, top.Name); b > 0 {
			t.Errorf("%d pods of the JobSet of a top-level queue were bound", b)
		}
		for _, js := range []*jobsetv1alpha2.JobSet{missing, top} {
			if err := c.Delete(ctx, js, client.PropagationPolicy("Foreground")); err != nil {
				t.Fatal(err)
			}
		}
		return ctx
	})
	testenv.Test(t, f)
}

// waitPodGroups waits until the JobSet has no KAI PodGroup left.
func waitPodGroups(ctx context.Context, t *testing.T, c client.Client, ns, jobSet string) {
	t.Helper()
	framework.Eventually(ctx, t, time.Minute, "no PodGroup of "+jobSet, func(ctx context.Context) (bool, string, error) {
		names, err := podGroupNames(ctx, c, ns, jobSet)
		if err != nil {
			return false, err.Error(), nil
		}
		return len(names) == 0, fmt.Sprint(names), nil
	})
}
