package kueue_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/e2e/framework"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// podsReadyTimeout is Kueue's waitForPodsReady.timeout in TestWaitForPodsReady; Kueue's default
// (v0.19: on, 30 minutes) behaves the same, only later.
const podsReadyTimeout = 20 * time.Second

// TestWaitForPodsReady: Kueue's waitForPodsReady beside the sequencer's stages (the problem
// kueue #6796 describes for JobSet's own dependsOn). Kueue is restarted for this test with
// waitForPodsReady.timeout 20 s, a requeue backoff from 1 s and one requeue allowed, then
// restarted as the suite runs it. Three JobSets use all add-ons but podgroups, each a stage
// init (one pod) and a stage train (two pods) held back by the sequencer:
//
//   - long: wait-for Complete, init works 45 s, longer than the timeout. Kueue counts the
//     JobSet's pods ready only when every ReplicatedJob's Jobs are ready or succeeded, so train's
//     gated pods keep the Workload's PodsReady False (WaitForStart) while init works normally,
//     and Kueue evicts it (Evicted, PodsReadyTimeout) 20 s after admission: init's pod is
//     deleted unfinished, the JobSet suspended; re-admitted after the backoff, it is evicted
//     again 20 s later and then deactivated (RequeuingLimitExceeded). It never completes. Its
//     create returns the sequencer's Warning naming waitForPodsReady.timeout.
//   - short: wait-for Complete, init works 8 s, less than the timeout: train is released, its
//     pods are ready before the timeout, PodsReady True (Started), it completes, never evicted.
//   - ready: wait-for Ready, init works 45 s: train is released once init's pod is ready, PodsReady
//     is True within seconds, it completes, never evicted. No Warning.
func TestWaitForPodsReady(t *testing.T) {
	testenv.Test(t, feature("waitForPodsReady", "Kueue evicts a staged JobSet whose first stage outlasts waitForPodsReady.timeout; the Warning says so",
		func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			restartKueue(ctx, t, kueueWithPodsReady())
			t.Cleanup(func() { restartKueue(context.Background(), t, suiteKueue()) })

			c := framework.Client(t, cfg)
			ns := framework.NamespaceFrom(ctx)
			q := makeQueues(ctx, t, c, ns, queueOptions{cpu: "10"})
			staged := func(name, waitFor, initRun string) *jobsetv1alpha2.JobSet {
				return shape{name: name, queue: q.localQueue, all: true, waitFor: waitFor, initRun: initRun, trainRun: "3s",
					trainJobs: 1, trainPods: 2, cpu: "1"}.jobSet(ns)
			}
			long, short, ready := staged("long", "", "45s"), staged("short", "", "8s"), staged("ready", "Ready", "45s")
			for _, js := range []*jobsetv1alpha2.JobSet{long, short, ready} {
				got := framework.CreateWithWarnings(ctx, t, cfg, js)
				warned := slices.ContainsFunc(got, func(m string) bool {
					return strings.Contains(m, "sequencer: ") && strings.Contains(m, "waitForPodsReady.timeout") &&
						strings.Contains(m, "ReplicatedJobs train still wait for init to complete")
				})
				if want := js.Annotations[contract.WaitForAnnotationKey] != "Ready"; warned != want {
					t.Errorf("JobSet %s: admission warnings %q; want the sequencer's waitForPodsReady Warning: %t", js.Name, got, want)
				} else if warned && js == long {
					t.Logf("admission Warning: %s", got[slices.IndexFunc(got, func(m string) bool { return strings.HasPrefix(m, "sequencer: ") })])
				}
			}

			// long: evicted while init works, twice, then deactivated.
			wl := waitWorkload(ctx, t, c, long, "Admitted", time.Minute)
			admitted := conditionTime(wl, "Admitted")
			var initPod corev1.Pod
			framework.Eventually(ctx, t, 30*time.Second, "long's init pod running and ready", func(ctx context.Context) (bool, string, error) {
				ps, err := pods(ctx, c, long)
				if err != nil {
					return false, err.Error(), nil
				}
				for _, p := range ps {
					if p.Labels[contract.ReplicatedJobNameLabelKey] == "init" && p.Status.Phase == corev1.PodRunning && framework.PodReady(&p) {
						initPod = p
						return true, "", nil
					}
				}
				return false, fmt.Sprintf("%d pods", len(ps)), nil
			})
			if ok, reason := conditionTrue(wl, "PodsReady"); ok {
				t.Errorf("long's Workload PodsReady True (%s) while train waits behind the sequencer's gate", reason)
			}
			evicted := waitEvicted(ctx, t, c, long, 1, podsReadyTimeout+30*time.Second)
			after := conditionTime(evicted, "Evicted").Sub(admitted)
			t.Logf("long: admitted %s, evicted %s after admission (timeout %s); conditions %s", admitted.Format(time.RFC3339), after, podsReadyTimeout, conditionsOf(evicted))
			if after < podsReadyTimeout-time.Second {
				t.Errorf("long evicted %s after admission, before the timeout %s", after, podsReadyTimeout)
			}
			if _, reason := conditionTrue(evicted, "PodsReady"); reason != "WaitForStart" {
				t.Errorf("long's PodsReady reason %q at eviction, want WaitForStart", reason)
			}
			framework.Eventually(ctx, t, 30*time.Second, "long suspended, init's pod gone unfinished", func(ctx context.Context) (bool, string, error) {
				if err := c.Get(ctx, key(long), long); err != nil {
					return false, err.Error(), nil
				}
				var p corev1.Pod
				err := c.Get(ctx, client.ObjectKeyFromObject(&initPod), &p)
				switch {
				case err == nil && p.Status.Phase == corev1.PodSucceeded:
					return false, "", fmt.Errorf("init's pod %s completed: it outlasted the eviction", p.Name)
				case client.IgnoreNotFound(err) != nil:
					return false, err.Error(), nil
				}
				return ptr.Deref(long.Spec.Suspend, false) && err != nil, fmt.Sprintf("suspend %v, init pod %v", long.Spec.Suspend, err), nil
			})
			deactivated := waitDeactivated(ctx, t, c, long, 2*podsReadyTimeout+30*time.Second)
			t.Logf("long: deactivated %s after the first admission; conditions %s; requeueState %v", time.Since(admitted).Round(time.Second),
				conditionsOf(deactivated), mustNested(deactivated, "status", "requeueState"))
			if _, reason := conditionTrue(deactivated, "Evicted"); reason != "DeactivatedDueToRequeuingLimitExceeded" {
				t.Errorf("long's Evicted reason %q once deactivated, want DeactivatedDueToRequeuingLimitExceeded", reason)
			}
			if requeued, reason := conditionTrue(deactivated, "Requeued"); !requeued || reason != "BackoffFinished" {
				t.Errorf("long's Requeued %t (%s), want True (BackoffFinished): it was not requeued once before the second eviction", requeued, reason)
			}
			if second := conditionTime(deactivated, "Admitted"); !second.After(admitted) {
				t.Errorf("long admitted once only (%s): want a second admission after the first eviction", second)
			}
			if err := c.Get(ctx, key(long), long); err != nil {
				t.Fatal(err)
			}
			if !ptr.Deref(long.Spec.Suspend, false) {
				t.Errorf("long not left suspended once deactivated: suspend %v", long.Spec.Suspend)
			}
			if ps, err := pods(ctx, c, long); err != nil || slices.ContainsFunc(ps, func(p corev1.Pod) bool { return p.Status.Phase == corev1.PodSucceeded }) {
				t.Errorf("a pod of long completed (%v): the evictions should have cut every attempt short", err)
			}

			// short and ready: PodsReady True before the timeout, never evicted, completed.
			for _, js := range []*jobsetv1alpha2.JobSet{short, ready} {
				jobSetDone(ctx, t, c, js, 2*time.Minute)
				wl, err := workload(ctx, c, js)
				if err != nil || wl == nil {
					t.Fatalf("Workload of %s: %v", js.Name, err)
				}
				admitted, podsReady := conditionTime(wl, "Admitted"), conditionTime(wl, "PodsReady")
				t.Logf("%s: PodsReady %s after admission; conditions %s", js.Name, podsReady.Sub(admitted), conditionsOf(wl))
				if evictedOnce(wl) {
					t.Errorf("%s was evicted: %s", js.Name, conditionsOf(wl))
				}
				if reason := conditionReason(wl, "PodsReady"); reason != "Started" {
					t.Errorf("%s's PodsReady reason %q, want Started", js.Name, reason)
				}
				if podsReady.Sub(admitted) >= podsReadyTimeout {
					t.Errorf("%s's pods ready %s after admission, not within the timeout %s", js.Name, podsReady.Sub(admitted), podsReadyTimeout)
				}
			}
			return ctx
		}))
}

// suiteKueue is Kueue as the suite runs it; kueueWithPodsReady the same with TestWaitForPodsReady's
// waitForPodsReady.
func suiteKueue() framework.KueueOptions {
	return framework.KueueOptions{DeviceClassMappings: map[string][]string{quotaDevice: {quotaClass}}}
}

func kueueWithPodsReady() framework.KueueOptions {
	o := suiteKueue()
	o.WaitForPodsReady = &framework.KueueWaitForPodsReady{Timeout: podsReadyTimeout, BackoffBaseSeconds: 1, BackoffLimitCount: 1}
	return o
}

// restartKueue stops Kueue and starts it with o (Kueue reads its Configuration only at start).
func restartKueue(ctx context.Context, t *testing.T, o framework.KueueOptions) {
	t.Helper()
	if err := framework.StopKueue(ctx, tb); err != nil {
		t.Fatalf("stopping Kueue: %v", err)
	}
	if err := framework.StartKueue(ctx, tb, o, logf); err != nil {
		t.Fatalf("starting Kueue: %v", err)
	}
}

// waitEvicted waits until the JobSet's Workload is Evicted by PodsReadyTimeout with
// requeueState.count n.
func waitEvicted(ctx context.Context, t *testing.T, c client.Client, js *jobsetv1alpha2.JobSet, n int64, timeout time.Duration) *unstructured.Unstructured {
	t.Helper()
	var wl *unstructured.Unstructured
	framework.Eventually(ctx, t, timeout, fmt.Sprintf("%s evicted by PodsReadyTimeout (requeue %d)", js.Name, n), func(ctx context.Context) (bool, string, error) {
		var err error
		if wl, err = workload(ctx, c, js); err != nil || wl == nil {
			return false, fmt.Sprint(err), nil
		}
		ok, reason := conditionTrue(wl, "Evicted")
		count, _, _ := unstructured.NestedInt64(wl.Object, "status", "requeueState", "count")
		return ok && reason == "PodsReadyTimeout" && count == n, conditionsOf(wl), nil
	})
	return wl
}

// waitDeactivated waits until Kueue set the JobSet's Workload inactive (spec.active false).
func waitDeactivated(ctx context.Context, t *testing.T, c client.Client, js *jobsetv1alpha2.JobSet, timeout time.Duration) *unstructured.Unstructured {
	t.Helper()
	var wl *unstructured.Unstructured
	framework.Eventually(ctx, t, timeout, js.Name+"'s Workload deactivated", func(ctx context.Context) (bool, string, error) {
		var err error
		if wl, err = workload(ctx, c, js); err != nil || wl == nil {
			return false, fmt.Sprint(err), nil
		}
		active, found, _ := unstructured.NestedBool(wl.Object, "spec", "active")
		return found && !active, conditionsOf(wl), nil
	})
	return wl
}

// evictedOnce tells whether the Workload was ever evicted or requeued.
func evictedOnce(wl *unstructured.Unstructured) bool {
	_, requeued, _ := unstructured.NestedMap(wl.Object, "status", "requeueState")
	return requeued || conditionReason(wl, "Evicted") != ""
}

// conditionReason is the reason of Kueue's object's condition ("" when it has none).
func conditionReason(u *unstructured.Unstructured, cond string) string {
	_, reason := conditionTrue(u, cond)
	return reason
}

// conditionsOf is the object's conditions, each as type=status(reason)@time.
func conditionsOf(u *unstructured.Unstructured) string {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	var out []string
	for _, c := range conds {
		m, _ := c.(map[string]any)
		out = append(out, fmt.Sprintf("%v=%v(%v)@%v", m["type"], m["status"], m["reason"], m["lastTransitionTime"]))
	}
	return strings.Join(out, " ")
}

func mustNested(u *unstructured.Unstructured, fields ...string) any {
	v, _, _ := unstructured.NestedFieldNoCopy(u.Object, fields...)
	return v
}
