package controller

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/pkg/addon/checks/sequencer"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// A JobSet managed elsewhere (MultiKueue's manager cluster) is not released, even read whole
// (the add-on's cache keeps less of it): no pod is ungated, no annotation written, nothing told.
// The same JobSet managed by JobSet's own controller is released.
func TestReconcileManagedElsewhere(t *testing.T) {
	for name, tc := range map[string]struct {
		managedBy    *string
		wantReleased bool
	}{
		"MultiKueue":              {managedBy: ptr.To("kueue.x-k8s.io/multikueue")},
		"another controller":      {managedBy: ptr.To("example.com/runner")},
		"JobSet's own controller": {managedBy: ptr.To(contract.JobSetControllerManagedBy), wantReleased: true},
	} {
		t.Run(name, func(t *testing.T) {
			js, pod := initThenNode()
			js.Spec.ManagedBy = tc.managedBy
			c := initThenNodeClient(js, pod).Build()
			rec := events.NewFakeRecorder(10)
			r := &Reconciler{Client: c, Recorder: rec, Clock: clocktesting.NewFakeClock(time.Unix(1_800_000_000, 0)), Workers: 2}
			if _, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(js)}); err != nil {
				t.Fatalf("Reconcile: %v", err)
			}
			var got corev1.Pod
			if err := c.Get(context.Background(), client.ObjectKeyFromObject(pod), &got); err != nil {
				t.Fatal(err)
			}
			var gotJS jobsetv1alpha2.JobSet
			if err := c.Get(context.Background(), client.ObjectKeyFromObject(js), &gotJS); err != nil {
				t.Fatal(err)
			}
			_, annotated := gotJS.Annotations[contract.ReleasedAnnotationKey]
			if released := !sequencer.HasGate(got.Spec.SchedulingGates); released != tc.wantReleased || annotated != tc.wantReleased || (len(rec.Events) > 0) != tc.wantReleased {
				t.Errorf("pod released %v, released annotation %v, %d events; want released %v", released, annotated, len(rec.Events), tc.wantReleased)
			}
		})
	}
}
