package kueue_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/e2e/framework"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// schedulerPluginsVersion is the version of the coscheduling scheduler the testbed runs: the
// directory bin/testbed/sp-scheduler links into (bin/scheduler-plugins-<version>).
func schedulerPluginsVersion() string {
	target, err := os.Readlink(tb.Bin("sp-scheduler"))
	if err != nil {
		return ""
	}
	return strings.TrimPrefix(filepath.Base(filepath.Dir(target)), "scheduler-plugins-")
}

// claimStates reads the JobSet's claims and pods: how many claims are allocated, and each pod's
// phase, node, gates and why it is not scheduled.
func claimStates(ctx context.Context, c client.Client, js *jobsetv1alpha2.JobSet) (allocated, total int, inFlight int, msg string, err error) {
	rc, err := claims(ctx, c, js)
	if err != nil {
		return 0, 0, 0, "", err
	}
	for _, cl := range rc {
		if cl.Status.Allocation != nil {
			allocated++
		}
	}
	ps, err := pods(ctx, c, js)
	if err != nil {
		return 0, 0, 0, "", err
	}
	var states []string
	for _, p := range ps {
		st := fmt.Sprintf("%s %s node=%q gates=%s", p.Name, p.Status.Phase, p.Spec.NodeName, gateNames(&p))
		for _, cond := range p.Status.Conditions {
			if cond.Type == corev1.PodScheduled && cond.Status != corev1.ConditionTrue {
				st += " unscheduled: " + cond.Message
				if strings.Contains(cond.Message, "is in the process of being allocated") {
					inFlight++
				}
			}
		}
		states = append(states, st)
	}
	return allocated, len(rc), inFlight, fmt.Sprintf("%d of %d claims allocated; pods: %s", allocated, len(rc), strings.Join(states, "; ")), nil
}

// queuedOnCoscheduling creates, in the test's namespace and queues, an all-add-ons JobSet of
// two train Jobs of pods pods each on coscheduling, waits until Kueue admits it, then polls
// claimStates until done says so (an error from done fails the test at once).
func queuedOnCoscheduling(ctx context.Context, t *testing.T, cfg *envconf.Config, name string, pods int, what string,
	done func(allocated, total, inFlight int, msg string) (bool, error)) (client.Client, *jobsetv1alpha2.JobSet) {
	t.Helper()
	c := framework.Client(t, cfg)
	ns := framework.NamespaceFrom(ctx)
	q := makeQueues(ctx, t, c, ns, queueOptions{cpu: "5"})
	s := shape{name: name, queue: q.localQueue, all: true, scheduler: contract.SchedulerCoscheduling,
		initRun: "2s", trainRun: "6s", trainJobs: 2, trainPods: pods, cpu: "1"}
	js := s.jobSet(ns)
	warned := slices.ContainsFunc(framework.CreateWithWarnings(ctx, t, cfg, js), func(w string) bool { return strings.Contains(w, "deadlock") })
	if want := pods > 1; warned != want {
		t.Errorf("admission warned of coscheduling's deadlock on shared claims: %t, want %t (%d pods a Job)", warned, want, pods)
	}
	waitWorkload(ctx, t, c, js, "Admitted", time.Minute)
	seen := ""
	framework.Eventually(ctx, t, time.Minute, what, func(ctx context.Context) (bool, string, error) {
		n, total, inFlight, msg, err := claimStates(ctx, c, js)
		if err != nil {
			return false, seen + " (then: " + err.Error() + ")", nil
		}
		seen = msg
		ok, err := done(n, total, inFlight, msg)
		return ok, msg, err
	})
	return c, js
}

// TestCoschedulingClaims: JobSets with all four add-ons whose gangs are coscheduling's
// (scheduler-plugins' scheduler, a second scheduler), queued by Kueue, with a claim per train
// Job made by resourceclaims.
//
//   - one pod per Job: coscheduling's scheduler allocates each Job's claim (its DynamicResources
//     plugin, resource.k8s.io/v1) and binds each stage's gang whole; the JobSet completes.
//   - two pods per Job, sharing the Job's claim: measured, a deadlock. The first pod of a Job
//     gets the claim's allocation in flight and waits in coscheduling's Permit for its gang;
//     its sibling finds the claim "in the process of being allocated" and is unschedulable, so
//     PostFilter rejects the whole gang, and the same happens on every retry. kube-scheduler's
//     own gang scheduling (podgroups' `kubernetes` backend) allocates such claims (TestQueueing).
//
// scheduler-plugins v0.33.5 is built on Kubernetes 1.33, without resource.k8s.io/v1 and with DRA
// off: it allocates no claim, and the test says so and stops.
func TestCoschedulingClaims(t *testing.T) {
	if v := schedulerPluginsVersion(); strings.HasPrefix(v, "v0.33.") {
		t.Skipf("scheduler-plugins %s: built on Kubernetes 1.33 (no resource.k8s.io/v1), it allocates no DRA claim", v)
	}
	testenv.Test(t, feature("coscheduling-claim-per-pod", "coscheduling allocates the claim of each one-pod Job of a queued JobSet and binds its gangs",
		func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			c, js := queuedOnCoscheduling(ctx, t, cfg, "cosched", 1, "claims allocated by coscheduling's scheduler", func(allocated, total, _ int, _ string) (bool, error) {
				return total == 2 && allocated == total, nil
			})
			jobSetDone(ctx, t, c, js, 2*time.Minute)
			ps, err := pods(ctx, c, js)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range ps {
				if p.Spec.SchedulerName != framework.CoschedulingSchedulerName {
					t.Errorf("pod %s: schedulerName %q, want %q", p.Name, p.Spec.SchedulerName, framework.CoschedulingSchedulerName)
				}
			}
			framework.WaitEventCounts(ctx, t, c, js, map[string]int{"StageReleased": 1, "PodGroupCreated": 2})
			return ctx
		}))
	testenv.Test(t, feature("coscheduling-shared-claim", "two pods of a Job sharing its claim in one coscheduling gang: deadlocked",
		func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			c, js := queuedOnCoscheduling(ctx, t, cfg, "shared", 2, "the train gang unschedulable: a sibling finds the shared claim in flight", func(allocated, _, inFlight int, msg string) (bool, error) {
				if allocated > 0 {
					return false, fmt.Errorf("a shared claim was allocated (%s): coscheduling no longer deadlocks; update this test and docs/compatibility.md", msg)
				}
				return inFlight > 0, nil
			})
			// Still so 20 s later: no claim allocated, no train pod bound.
			time.Sleep(20 * time.Second)
			n, _, _, msg, err := claimStates(ctx, c, js)
			if err != nil {
				t.Fatal(err)
			}
			if n > 0 {
				t.Errorf("a shared claim was allocated after all (%s): update this test and docs/compatibility.md", msg)
			}
			t.Logf("after 20 s: %s", msg)
			return ctx
		}))
}
