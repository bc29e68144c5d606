package kueue_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
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

// allAddOns is a JobSet that uses all four add-ons, gang-scheduled by kube-scheduler (the
// Workload API), which allocates the claims too: init (one pod) then train (2 Jobs x 2 pods),
// one CPU a pod, five in all.
func allAddOns(name, queue, initRun, trainRun string) shape {
	return shape{name: name, queue: queue, all: true, scheduler: contract.SchedulerKubernetes,
		initRun: initRun, trainRun: trainRun, trainJobs: 2, trainPods: 2, cpu: "1"}
}

// TestQueueing: two JobSets that use all four add-ons in a ClusterQueue of 5 CPUs, which fits
// one of them. The second is created while the first runs: Kueue keeps it suspended, and it
// holds what docs/install.md says a queued JobSet holds — its PVCs (made when the JobSet is
// created, so a checkpoint outlives any eviction), its claims (made ahead of its Jobs,
// unallocated), the PodGroup of its first stage (which has no pods to schedule), its suspended
// Jobs; no pod, no release. Once the first completes, Kueue admits the second, which runs with
// the same PVCs and claims, in order, as a gang, on the flavor's nodes, and completes.
//
// make e2e runs this test (the reduced set of the Kueue suite).
func TestQueueing(t *testing.T) {
	testenv.Test(t, feature("queueing", "the second JobSet waits suspended holding only its PVCs, claims and first PodGroup, then runs",
		func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			c := framework.Client(t, cfg)
			ns := framework.NamespaceFrom(ctx)
			q := makeQueues(ctx, t, c, ns, queueOptions{cpu: "5"})
			firstShape, secondShape := allAddOns("first", q.localQueue, "4s", "6s"), allAddOns("second", q.localQueue, "2s", "2s")
			first, second := firstShape.jobSet(ns), secondShape.jobSet(ns)

			framework.CreateAll(ctx, t, c, first)
			waitWorkload(ctx, t, c, first, "Admitted", time.Minute)
			framework.CreateAll(ctx, t, c, second)

			// Queued: pending in Kueue, suspended, holding exactly what the docs say.
			var queuedPVCs map[string]types.UID
			var queuedClaims map[string]types.UID
			framework.Eventually(ctx, t, 30*time.Second, "second queued, holding its PVCs, claims and stage-0 PodGroup", func(ctx context.Context) (bool, string, error) {
				if err := c.Get(ctx, key(second), second); err != nil {
					return false, err.Error(), nil
				}
				wl, err := workload(ctx, c, second)
				if err != nil || wl == nil {
					return false, fmt.Sprintf("no Workload (%v)", err), nil
				}
				if reserved, _ := conditionTrue(wl, "QuotaReserved"); reserved {
					return false, "", fmt.Errorf("second admitted while first runs: the ClusterQueue fits one")
				}
				if !ptr.Deref(second.Spec.Suspend, false) {
					return false, "", fmt.Errorf("second is not suspended while queued")
				}
				ps, err := pods(ctx, c, second)
				if err != nil || len(ps) > 0 {
					return false, "", fmt.Errorf("second has %d pods while queued (%v)", len(ps), err)
				}
				if r := released(second); r != "" {
					return false, "", fmt.Errorf("second has released stages while queued: %s", r)
				}
				pv, err := pvcs(ctx, c, second)
				if err != nil {
					return false, err.Error(), nil
				}
				rc, err := claims(ctx, c, second)
				if err != nil {
					return false, err.Error(), nil
				}
				for _, cl := range rc {
					if cl.Status.Allocation != nil || len(cl.Status.ReservedFor) > 0 {
						return false, "", fmt.Errorf("claim %s of the queued JobSet is allocated or reserved: %+v", cl.Name, cl.Status)
					}
				}
				pgs, err := podGroups(ctx, c, second, contract.SchedulerKubernetes)
				if err != nil {
					return false, err.Error(), nil
				}
				js, err := jobs(ctx, c, second)
				if err != nil {
					return false, err.Error(), nil
				}
				for _, j := range js {
					if !ptr.Deref(j.Spec.Suspend, false) {
						return false, "", fmt.Errorf("Job %s of the queued JobSet is not suspended", j.Name)
					}
				}
				queuedPVCs, queuedClaims = map[string]types.UID{}, map[string]types.UID{}
				for n, p := range pv {
					queuedPVCs[n] = p.UID
				}
				for n, cl := range rc {
					queuedClaims[n] = cl.UID
				}
				ok := slices.Equal(slices.Sorted(maps.Keys(pv)), secondShape.pvcNames()) &&
					slices.Equal(slices.Sorted(maps.Keys(rc)), secondShape.claimNames()) &&
					slices.Equal(pgs, []string{stagePodGroup("second", 0)}) && len(js) == 3
				return ok, fmt.Sprintf("PVCs %v, claims %v, PodGroups %v, %d Jobs", slices.Sorted(maps.Keys(pv)), slices.Sorted(maps.Keys(rc)), pgs, len(js)), nil
			})
			if done, _ := conditionTrueOf(ctx, c, first, "Finished"); done {
				t.Fatal("first finished before second was seen queued: lengthen first's run")
			}
			// Meanwhile the first holds its claims allocated, as its train pods run.
			framework.Eventually(ctx, t, time.Minute, "first's claims allocated while it runs", func(ctx context.Context) (bool, string, error) {
				rc, err := claims(ctx, c, first)
				if err != nil {
					return false, err.Error(), nil
				}
				n := 0
				for _, cl := range rc {
					if cl.Status.Allocation != nil {
						n++
					}
				}
				return n == len(firstShape.claimNames()), fmt.Sprintf("%d of %d allocated", n, len(rc)), nil
			})

			jobSetDone(ctx, t, c, first, 2*time.Minute)
			firstWL := waitWorkload(ctx, t, c, first, "Finished", time.Minute)
			secondWL := waitWorkload(ctx, t, c, second, "Admitted", time.Minute)
			if finished, admitted := conditionTime(firstWL, "Finished"), conditionTime(secondWL, "QuotaReserved"); admitted.Before(finished) {
				t.Errorf("second's quota reserved at %s, before first finished at %s", admitted, finished)
			}
			checkRan(ctx, t, c, secondShape, second, queuedPVCs, queuedClaims)
			return ctx
		}))
}

// checkRan checks a completed all-add-ons JobSet: the PVCs and claims it had while queued (the
// same UIDs) are the ones its pods mounted and used, each train pod its own ckpt PVC; Kueue's
// flavor put its nodeSelector on the pods beside the add-ons' changes (the gang's PodGroup
// named in the pod); the sequencer released train once, after init completed; no PodGroup is
// left.
func checkRan(ctx context.Context, t *testing.T, c client.Client, s shape, js *jobsetv1alpha2.JobSet, wantPVCs, wantClaims map[string]types.UID) {
	t.Helper()
	jobSetDone(ctx, t, c, js, 2*time.Minute)
	pv, err := pvcs(ctx, c, js)
	if err != nil {
		t.Fatal(err)
	}
	for n, uid := range wantPVCs {
		if pv[n].UID != uid {
			t.Errorf("PVC %s: UID %s after the run, %s while queued", n, pv[n].UID, uid)
		}
	}
	rc, err := claims(ctx, c, js)
	if err != nil {
		t.Fatal(err)
	}
	for n, uid := range wantClaims {
		if rc[n].UID != uid {
			t.Errorf("claim %s: UID %s after the run, %s while queued", n, rc[n].UID, uid)
		}
	}
	ps, err := pods(ctx, c, js)
	if err != nil {
		t.Fatal(err)
	}
	var initDone time.Time
	for _, p := range ps {
		if p.Labels[contract.ReplicatedJobNameLabelKey] == "init" && p.Status.Phase == corev1.PodSucceeded {
			initDone = finishedAt(&p)
		}
	}
	trains := 0
	for _, p := range ps {
		if p.Status.Phase != corev1.PodSucceeded {
			continue
		}
		rj := p.Labels[contract.ReplicatedJobNameLabelKey]
		if p.Spec.NodeSelector["type"] != "kwok" {
			t.Errorf("pod %s: nodeSelector %v, want Kueue's flavor's type=kwok", p.Name, p.Spec.NodeSelector)
		}
		stage := 0
		if rj == "train" {
			stage = 1
		}
		if sg := p.Spec.SchedulingGroup; sg == nil || ptr.Deref(sg.PodGroupName, "") != stagePodGroup(s.name, stage) {
			t.Errorf("pod %s: schedulingGroup %+v, want PodGroup %s", p.Name, sg, stagePodGroup(s.name, stage))
		}
		if rj != "train" {
			continue
		}
		trains++
		if started := startedAt(&p); started.Before(initDone) {
			t.Errorf("train pod %s started at %s, before init completed at %s", p.Name, started, initDone)
		}
		job := p.Labels[contract.JobIndexLabelKey]
		idx := p.Labels[contract.JobCompletionIndexLabelKey]
		want := fmt.Sprintf("ckpt-%s-train-%s-%s", s.name, job, idx)
		if !mounts(&p, want) {
			t.Errorf("train pod %s does not mount its PVC %s: %+v", p.Name, want, p.Spec.Volumes)
		}
		if len(p.Spec.ResourceClaims) != 1 || ptr.Deref(p.Spec.ResourceClaims[0].ResourceClaimName, "") != fmt.Sprintf("%s-train-%s-dev", s.name, job) {
			t.Errorf("train pod %s: resourceClaims %+v", p.Name, p.Spec.ResourceClaims)
		}
	}
	if trains != s.trainJobs*s.trainPods {
		t.Errorf("%d train pods succeeded, want %d", trains, s.trainJobs*s.trainPods)
	}
	framework.WaitEventCounts(ctx, t, c, js, map[string]int{"StageReleased": 1})
	framework.Eventually(ctx, t, 30*time.Second, "no PodGroup left", func(ctx context.Context) (bool, string, error) {
		pgs, err := podGroups(ctx, c, js, s.scheduler)
		return err == nil && len(pgs) == 0, fmt.Sprint(pgs, err), nil
	})
}
