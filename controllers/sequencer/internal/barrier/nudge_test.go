package barrier

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/jobset-addons/jobset-addons/pkg/addon/addontest"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// TestNudge: a pod told open whose barrier container still runs is told again NudgeAfter after
// it was first seen told, then after twice that, and so on up to MaxNudgeAfter; a pod that left
// its barrier, or was never told, is not.
func TestNudge(t *testing.T) {
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	barrierPodOf := func(name, state string, running bool) *corev1.Pod {
		p := addontest.Pod("ns", "train", "w", 0, 0).Name(name).UID(name).Obj()
		p.Spec.NodeName = "node-0"
		if state != "" {
			p.Annotations = map[string]string{contract.StartBarrierStateAnnotationKey: state}
		}
		s := corev1.ContainerStatus{Name: contract.StartBarrierContainerName}
		if running {
			s.State.Running = &corev1.ContainerStateRunning{StartedAt: metav1.Now()}
		} else {
			s.State.Terminated = &corev1.ContainerStateTerminated{}
		}
		p.Status.InitContainerStatuses = []corev1.ContainerStatus{s}
		return p
	}
	stuck := barrierPodOf("stuck", contract.StartBarrierOpen, true)
	left := barrierPodOf("left", contract.StartBarrierOpen, false)
	untold := barrierPodOf("untold", "", true)
	failed := barrierPodOf("failed", contract.StartBarrierFailedPrefix+"timed out", true)
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(stuck, left, untold, failed).Build()
	clock := clocktesting.NewFakeClock(time.Date(2026, 11, 26, 14, 0, 0, 0, time.UTC))
	r := &Reconciler{Client: c, Clock: clock, Workers: 2}
	ctx := context.Background()

	nudged := func() map[string]string {
		out := map[string]string{}
		for _, name := range []string{"stuck", "left", "untold", "failed"} {
			var p corev1.Pod
			if err := c.Get(ctx, client.ObjectKey{Namespace: "ns", Name: name}, &p); err != nil {
				t.Fatal(err)
			}
			if v := p.Annotations[contract.StartBarrierNudgeAnnotationKey]; v != "" {
				out[name] = v
			}
		}
		return out
	}
	step := func(after time.Duration, wantNext time.Duration, wantNudged ...string) {
		t.Helper()
		clock.Step(after)
		pods := []barrierPod{{pod: stuck.DeepCopy()}, {pod: left.DeepCopy()}, {pod: untold.DeepCopy()}, {pod: failed.DeepCopy()}}
		before := nudged()
		next, err := r.nudge(ctx, pods, clock.Now())
		if err != nil {
			t.Fatal(err)
		}
		after2 := nudged()
		var got []string
		for name, v := range after2 {
			if before[name] != v {
				got = append(got, name)
			}
		}
		slices.Sort(got)
		if !slices.Equal(got, wantNudged) {
			t.Errorf("at +%v: told again %v, want %v", clock.Since(time.Date(2026, 11, 26, 14, 0, 0, 0, time.UTC)), got, wantNudged)
		}
		if next != wantNext {
			t.Errorf("at +%v: look again after %v, want %v", clock.Since(time.Date(2026, 11, 26, 14, 0, 0, 0, time.UTC)), next, wantNext)
		}
	}
	step(0, NudgeAfter)                                  // first seen told: counted from now
	step(4*time.Second, time.Second)                     // not yet
	step(time.Second, 2*NudgeAfter, "failed", "stuck")   // 5 s: told again, next after 10 s
	step(5*time.Second, 5*time.Second)                   // 5 s later: not yet
	step(5*time.Second, 4*NudgeAfter, "failed", "stuck") // 10 s: again, next after 20 s
	step(20*time.Second, 8*NudgeAfter, "failed", "stuck")
	step(40*time.Second, MaxNudgeAfter, "failed", "stuck")
	step(MaxNudgeAfter, MaxNudgeAfter, "failed", "stuck") // at most every minute
	if v := nudged()["stuck"]; v != clock.Now().UTC().Format(time.RFC3339Nano) {
		t.Errorf("nudge annotation %q, want the time it was written", v)
	}
}
