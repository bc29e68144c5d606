package controller

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
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
)

// TestGoneWakesWaiters: the deletion of a PVC that held a JobSet's name for another JobSet
// reconciles the JobSets that waited for it, once; its updates (terminating) do not, nor does
// a PVC of the same name elsewhere.
func TestGoneWakesWaiters(t *testing.T) {
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "ckpt-gpt-eval-worker-1-0"}}
	other := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "other", Name: pvc.Name}}
	r := &Reconciler{}
	for range 2 {
		r.waitFor(&jobsetv1alpha2.JobSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "gpt-eval"}}, pvc)
	}
	h := r.gone()
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
		q.ShutDown()
	}
}
