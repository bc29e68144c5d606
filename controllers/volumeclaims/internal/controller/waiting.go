package controller

import (
	"context"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
)

// waitFor records that js waits for the PVC pvc (another JobSet's, of one of js's names) to
// go: its deletion reconciles js at once (gone), not on js's back-off.
func (r *Reconciler) waitFor(js *jobsetv1alpha2.JobSet, pvc client.Object) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.waiting == nil {
		r.waiting = map[types.NamespacedName]sets.Set[types.NamespacedName]{}
	}
	key := client.ObjectKeyFromObject(pvc)
	if r.waiting[key] == nil {
		r.waiting[key] = sets.New[types.NamespacedName]()
	}
	r.waiting[key].Insert(client.ObjectKeyFromObject(js))
}

// waiters are the JobSets that waited for pvc (waitFor), forgotten.
func (r *Reconciler) waiters(pvc client.Object) []reconcile.Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	key := client.ObjectKeyFromObject(pvc)
	var out []reconcile.Request
	for js := range r.waiting[key] {
		out = append(out, reconcile.Request{NamespacedName: js})
	}
	delete(r.waiting, key)
	return out
}

// gone is the handler of the add-on's PVCs' deletions: it reconciles the JobSets that waited
// for the PVC to go (waitFor). Only the deletion: while the PVC is terminating, it still holds
// the name.
func (r *Reconciler) gone() handler.EventHandler {
	return handler.Funcs{DeleteFunc: func(_ context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		for _, req := range r.waiters(e.Object) {
			q.Add(req)
		}
	}}
}
