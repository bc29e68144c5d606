package kueue_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
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

// TestPreemption: a JobSet that uses all four add-ons (train waits for init to be Ready: init
// is a long-running server) runs in a ClusterQueue that fits one; a JobSet of a higher
// WorkloadPriorityClass arrives and Kueue preempts the first. The preempted JobSet is suspended:
// its pods are deleted, its Jobs suspended (JobSet keeps them; they make new pods on resume),
// its per-pod PVCs kept (checkpoints), its claims kept with their Jobs and no longer reserved,
// the sequencer takes back its release of train (train's pods will be gated again) and podgroups
// deletes train's PodGroup (init's stays, as stage 0's always does). Once the preemptor completes, Kueue admits it again: train's new
// pods wait behind the sequencer's gate until init is Ready again (released and told a second
// time), train's PodGroup is made again, and the JobSet completes with the same PVCs and claims
// (same UIDs).
func TestPreemption(t *testing.T) {
	testenv.Test(t, feature("preemption", "the preempted JobSet is suspended with its PVCs, claims and gates, and completes after re-admission",
		func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			c := framework.Client(t, cfg)
			ns := framework.NamespaceFrom(ctx)
			q := makeQueues(ctx, t, c, ns, queueOptions{cpu: "5", preempt: true})
			priorityClass(ctx, t, c, ns+"-low", 100)
			priorityClass(ctx, t, c, ns+"-high", 1000)

			lowShape := allAddOns("low", q.localQueue, "20s", "15s")
			lowShape.priority, lowShape.waitFor = ns+"-low", "Ready"
			low := lowShape.jobSet(ns)
			framework.CreateAll(ctx, t, c, low)
			waitWorkload(ctx, t, c, low, "Admitted", time.Minute)

			// train released (init Ready) and running.
			framework.Eventually(ctx, t, time.Minute, "low's train pods running", func(ctx context.Context) (bool, string, error) {
				ps, err := pods(ctx, c, low)
				if err != nil {
					return false, err.Error(), nil
				}
				running := 0
				for _, p := range ps {
					if p.Labels[contract.ReplicatedJobNameLabelKey] == "train" && p.Status.Phase == corev1.PodRunning {
						running++
					}
				}
				return running == 4, fmt.Sprintf("%d train pods running", running), nil
			})
			framework.Eventually(ctx, t, 10*time.Second, "train recorded as released", func(ctx context.Context) (bool, string, error) {
				err := c.Get(ctx, key(low), low)
				return err == nil && strings.Contains(released(low), "train"), released(low), nil
			})
			before := snapshot(ctx, t, c, low)
			framework.WaitEventCounts(ctx, t, c, low, map[string]int{"StageReleased": 1})

			// A plain JobSet (no add-on) of the same 5 CPUs, running long enough to watch low wait.
			high := shape{name: "high", queue: q.localQueue, priority: ns + "-high", initRun: "8s", trainRun: "8s", trainJobs: 2, trainPods: 2, cpu: "1"}.jobSet(ns)
			framework.CreateAll(ctx, t, c, high)

			// Preempted: suspended, no pods, Jobs suspended, storage and claims kept, train gated
			// again, its PodGroup gone.
			framework.Eventually(ctx, t, time.Minute, "low preempted and suspended", func(ctx context.Context) (bool, string, error) {
				if err := c.Get(ctx, key(low), low); err != nil {
					return false, err.Error(), nil
				}
				evicted, reason := conditionTrueOf(ctx, c, low, "Evicted")
				ps, _ := pods(ctx, c, low)
				pgs, _ := podGroups(ctx, c, low, contract.SchedulerKubernetes)
				withdrawn := released(low) == `{"restartAttempt":0,"replicatedJobs":[]}`
				// Stage 0's PodGroup stays (stage 0 may always run, as an unsequenced JobSet's
				// gang stays while suspended); train's goes with its release.
				return evicted && ptr.Deref(low.Spec.Suspend, false) && len(ps) == 0 && slices.Equal(pgs, []string{stagePodGroup("low", 0)}) && withdrawn,
					fmt.Sprintf("evicted %t (%s), suspend %v, %d pods, PodGroups %v, released %s", evicted, reason, low.Spec.Suspend, len(ps), pgs, released(low)), nil
			})
			if preempted, reason := conditionTrueOf(ctx, c, low, "Preempted"); !preempted {
				t.Errorf("low's Workload is not Preempted (reason %q)", reason)
			}
			during := snapshot(ctx, t, c, low)
			for _, j := range during.jobs {
				if !j.suspended {
					t.Errorf("Job %s of the preempted JobSet is not suspended", j.name)
				}
			}
			if !maps.Equal(during.jobUIDs(), before.jobUIDs()) {
				t.Errorf("Jobs %v while preempted, %v before: JobSet keeps its Jobs through a suspend", during.jobUIDs(), before.jobUIDs())
			}
			sameUIDs(t, "PVCs", before.pvcs, during.pvcs)
			sameUIDs(t, "claims", before.claims, during.claims)
			for n, reserved := range during.reserved {
				if reserved {
					t.Errorf("claim %s still reserved by a pod while preempted", n)
				}
			}
			framework.WaitEventCounts(ctx, t, c, low, map[string]int{"StageReleasesWithdrawn": 1})

			// The preemptor runs and completes; low is admitted again and completes.
			jobSetDone(ctx, t, c, high, 2*time.Minute)
			waitWorkload(ctx, t, c, low, "Admitted", time.Minute)
			jobSetDone(ctx, t, c, low, 3*time.Minute)
			after := snapshot(ctx, t, c, low)
			sameUIDs(t, "PVCs", before.pvcs, after.pvcs)
			sameUIDs(t, "claims", before.claims, after.claims)
			framework.WaitEventCounts(ctx, t, c, low, map[string]int{"StageReleased": 2, "StageReleasesWithdrawn": 1})
			framework.WaitEventCounts(ctx, t, c, low, map[string]int{"PodGroupCreated": 3}) // stage 0 once, stage 1 twice

			// After the re-admission, train's pods started only once init was Ready again.
			ps, err := pods(ctx, c, low)
			if err != nil {
				t.Fatal(err)
			}
			var initReady time.Time
			for _, p := range ps {
				if p.Labels[contract.ReplicatedJobNameLabelKey] == "init" && p.Status.Phase == corev1.PodSucceeded {
					initReady = startedAt(&p)
				}
			}
			trains := 0
			for _, p := range ps {
				if p.Labels[contract.ReplicatedJobNameLabelKey] != "train" || p.Status.Phase != corev1.PodSucceeded {
					continue
				}
				trains++
				if startedAt(&p).Before(initReady) {
					t.Errorf("train pod %s started at %s, before the re-admitted init pod started at %s", p.Name, startedAt(&p), initReady)
				}
			}
			if trains != 4 {
				t.Errorf("%d train pods succeeded after re-admission, want 4", trains)
			}
			return ctx
		}))
}

// state is what a JobSet holds at one moment.
type state struct {
	pvcs, claims map[string]types.UID
	reserved     map[string]bool
	jobs         []struct {
		name      string
		uid       types.UID
		suspended bool
	}
}

func (s state) jobUIDs() map[string]types.UID {
	out := map[string]types.UID{}
	for _, j := range s.jobs {
		out[j.name] = j.uid
	}
	return out
}

func snapshot(ctx context.Context, t *testing.T, c client.Client, js *jobsetv1alpha2.JobSet) state {
	t.Helper()
	s := state{pvcs: map[string]types.UID{}, claims: map[string]types.UID{}, reserved: map[string]bool{}}
	pv, err := pvcs(ctx, c, js)
	if err != nil {
		t.Fatal(err)
	}
	for n, p := range pv {
		s.pvcs[n] = p.UID
	}
	rc, err := claims(ctx, c, js)
	if err != nil {
		t.Fatal(err)
	}
	for n, cl := range rc {
		s.claims[n] = cl.UID
		s.reserved[n] = len(cl.Status.ReservedFor) > 0
	}
	js2, err := jobs(ctx, c, js)
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range js2 {
		s.jobs = append(s.jobs, struct {
			name      string
			uid       types.UID
			suspended bool
		}{j.Name, j.UID, ptr.Deref(j.Spec.Suspend, false)})
	}
	return s
}

func sameUIDs(t *testing.T, what string, want, got map[string]types.UID) {
	t.Helper()
	if len(want) == 0 {
		t.Errorf("no %s to compare", what)
	}
	if !maps.Equal(want, got) {
		t.Errorf("%s changed:\nbefore %v\nnow    %v (names %v)", what, want, got, slices.Sorted(maps.Keys(got)))
	}
}
