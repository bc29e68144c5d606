package sequencer_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/e2e/framework"
	"github.com/jobset-addons/jobset-addons/pkg/addon/addontest"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// TestStartBarrierTimeoutClock: the barrier's timeout counts on the sequencer's clock, not the
// node's. kwok cannot run a node whose clock is off, so the test plays one: once the pod that
// was placed waits at its barrier, its barrier container's startedAt (written by the kubelet,
// here kwok, on the node's clock) is set a year off; kwok leaves it so (its barrier stage
// applies only to a pod not yet at the barrier). The other pod of the group has no node yet.
//   - A year behind: no timeout at once; the group then completes (the held pod gets a node
//     before the timeout) and the JobSet completes.
//   - A year ahead: the waiting pod still fails at the configured timeout, naming it.
func TestStartBarrierTimeoutClock(t *testing.T) {
	for _, tc := range []struct {
		name    string
		years   int
		timeout string
	}{
		{name: "node clock a year behind", years: -1, timeout: "40s"},
		{name: "node clock a year ahead", years: 1, timeout: "8s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := framework.NamespacedFeature(tc.name, "timed out on the sequencer's clock", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
				c := framework.Client(t, cfg)
				ns := framework.NamespaceFrom(ctx)
				held := fmt.Sprintf("clock%d", tc.years+1)
				js := withBarrier(addontest.JobSet(ns, "clock"), contract.StartBarrierJobSet, tc.timeout).
					ReplicatedJobs(replicated("w", 1, 1, "1s"), heldBack(replicated("late", 1, 1, "1s"), held)).Obj()
				framework.CreateAll(ctx, t, c, js)
				pod := waitAtBarrier(ctx, t, c, js, "w")
				reached := time.Now()
				startedAt := skewBarrierStart(ctx, t, c, pod, tc.years)
				if tc.years < 0 {
					// Long enough for a reconcile on the pod's new status, well within the timeout.
					time.Sleep(8 * time.Second)
					if s := barrierState(getPod(ctx, t, c, pod)); s != "" {
						t.Fatalf("%s told %q %v after it reached its barrier, its startedAt a year back: want nothing before the %s timeout", pod.Name, s, time.Since(reached).Round(time.Second), tc.timeout)
					}
					assertStartedAt(ctx, t, c, pod, startedAt)
					labelNode(ctx, t, c, held)
					waitFinished(ctx, t, c, js)
					return ctx
				}
				framework.Eventually(ctx, t, 30*time.Second, "the waiting pod told the timeout", func(ctx context.Context) (bool, string, error) {
					s := barrierState(getPod(ctx, t, c, pod))
					return strings.HasPrefix(s, contract.StartBarrierFailedPrefix+"timed out after "+tc.timeout), s, nil
				})
				t.Logf("timed out %v after the pod reached its barrier (timeout %s)", time.Since(reached).Round(100*time.Millisecond), tc.timeout)
				return ctx
			})
			testenv.Test(t, f)
		})
	}
}

// waitAtBarrier waits for the pod of the ReplicatedJob rj of js to wait at its barrier.
func waitAtBarrier(ctx context.Context, t *testing.T, c client.Client, js *jobsetv1alpha2.JobSet, rj string) *corev1.Pod {
	t.Helper()
	var pod *corev1.Pod
	framework.Eventually(ctx, t, 30*time.Second, rj+"'s pod at its barrier", func(ctx context.Context) (bool, string, error) {
		for _, p := range jobSetPods(ctx, t, c, js) {
			if p.Labels[contract.ReplicatedJobNameLabelKey] == rj && barrierWaiting(&p) {
				pod = &p
				return true, "", nil
			}
		}
		return false, "", nil
	})
	return pod
}

func getPod(ctx context.Context, t *testing.T, c client.Client, pod *corev1.Pod) *corev1.Pod {
	t.Helper()
	var p corev1.Pod
	if err := c.Get(ctx, client.ObjectKeyFromObject(pod), &p); err != nil {
		t.Fatal(err)
	}
	return &p
}

// skewBarrierStart sets the startedAt of pod's running barrier container years off (as a node
// whose clock is that far off writes it) and returns it.
func skewBarrierStart(ctx context.Context, t *testing.T, c client.Client, pod *corev1.Pod, years int) time.Time {
	t.Helper()
	var at time.Time
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		p := getPod(ctx, t, c, pod)
		for i, s := range p.Status.InitContainerStatuses {
			if s.Name == contract.StartBarrierContainerName && s.State.Running != nil {
				at = s.State.Running.StartedAt.AddDate(years, 0, 0).Truncate(time.Second)
				p.Status.InitContainerStatuses[i].State.Running.StartedAt = metav1.NewTime(at)
				return c.Status().Update(ctx, p)
			}
		}
		return fmt.Errorf("%s: its barrier container is not running", p.Name)
	})
	if err != nil {
		t.Fatalf("setting the barrier's startedAt: %v", err)
	}
	assertStartedAt(ctx, t, c, pod, at)
	return at
}

// assertStartedAt fails the test unless pod's barrier container still says it started at at
// (kwok did not write its own time back).
func assertStartedAt(ctx context.Context, t *testing.T, c client.Client, pod *corev1.Pod, at time.Time) {
	t.Helper()
	for _, s := range getPod(ctx, t, c, pod).Status.InitContainerStatuses {
		if s.Name == contract.StartBarrierContainerName {
			if s.State.Running == nil || !s.State.Running.StartedAt.Time.Equal(at) {
				t.Fatalf("%s's barrier container: state %+v, want running since %v (kwok wrote it back?)", pod.Name, s.State, at)
			}
			return
		}
	}
	t.Fatalf("%s has no barrier container status", pod.Name)
}
