package addon

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// TestWaitingGone: the deletion of a PVC that held a JobSet's name for another JobSet
// reconciles the JobSets that waited for it, once, and calls also for each; its updates
// (terminating) do not, nor does a PVC of the same name elsewhere.
func TestWaitingGone(t *testing.T) {
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "ckpt-gpt-eval-worker-1-0"}}
	other := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "other", Name: pvc.Name}}
	var w Waiting
	for range 2 {
		w.For(types.NamespacedName{Namespace: "ns", Name: "gpt-eval"}, pvc)
	}
	var also []reconcile.Request
	h := w.Gone(func(req reconcile.Request) { also = append(also, req) })
	steps := []struct {
		name string
		do   func(q workqueue.TypedRateLimitingInterface[reconcile.Request])
		want int
	}{
		{"its update", func(q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			h.Update(context.Background(), event.UpdateEvent{ObjectOld: pvc, ObjectNew: pvc}, q)
		}, 0},
		{"a PVC of its name elsewhere deleted", func(q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			h.Delete(context.Background(), event.DeleteEvent{Object: other}, q)
		}, 0},
		{"its deletion", func(q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			h.Delete(context.Background(), event.DeleteEvent{Object: pvc}, q)
		}, 1},
		{"its deletion seen again", func(q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			h.Delete(context.Background(), event.DeleteEvent{Object: pvc}, q)
		}, 0},
	}
	for _, s := range steps {
		q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
		s.do(q)
		var got []reconcile.Request
		for q.Len() > 0 {
			req, _ := q.Get()
			got = append(got, req)
			q.Done(req)
		}
		var want []reconcile.Request
		if s.want == 1 {
			want = []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "gpt-eval"}}}
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: enqueued (-want +got):\n%s", s.name, diff)
		}
		if diff := cmp.Diff(want, also); diff != "" {
			t.Errorf("%s: also called for (-want +got):\n%s", s.name, diff)
		}
		also = nil
		q.ShutDown()
	}
}

// TestWaitingForget: a JobSet that is gone waits for nothing: the deletion of what it waited
// for reconciles only the JobSets still there.
func TestWaitingForget(t *testing.T) {
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "ckpt-a-b-0-0"}}
	gone, stays := types.NamespacedName{Namespace: "ns", Name: "a-b"}, types.NamespacedName{Namespace: "ns", Name: "a"}
	var w Waiting
	w.For(gone, pvc)
	w.For(stays, pvc)
	if !w.Forget(gone) {
		t.Errorf("Forget(%v) = false, want true: it waited", gone)
	}
	if w.Forget(gone) || w.Forget(types.NamespacedName{Namespace: "ns", Name: "never-waited"}) {
		t.Errorf("Forget = true for a JobSet that waits for nothing")
	}
	if diff := cmp.Diff([]reconcile.Request{{NamespacedName: stays}}, w.Waiters(pvc)); diff != "" {
		t.Errorf("waiters (-want +got):\n%s", diff)
	}
	if got := w.Waiters(pvc); len(got) != 0 {
		t.Errorf("waiters after they were taken: %v", got)
	}
}
