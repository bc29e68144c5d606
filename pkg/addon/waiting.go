package addon

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Waiting records which JobSets wait for an object of one of their names, made for another
// JobSet (or another part of the same one: names are joined with "-"), to go: an add-on that
// found the name taken (contract.Foreign) makes its own object only once that one is deleted,
// and its deletion (Gone) reconciles the waiting JobSets at once, not on their back-off. The
// zero value is ready to use.
type Waiting struct {
	mu sync.Mutex
	// waiting holds, per object (namespace and name), the JobSets that wait for it to go.
	waiting map[types.NamespacedName]sets.Set[types.NamespacedName]
}

// For records that the JobSet js waits for obj to go.
func (w *Waiting) For(js types.NamespacedName, obj client.Object) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.waiting == nil {
		w.waiting = map[types.NamespacedName]sets.Set[types.NamespacedName]{}
	}
	key := client.ObjectKeyFromObject(obj)
	if w.waiting[key] == nil {
		w.waiting[key] = sets.New[types.NamespacedName]()
	}
	w.waiting[key].Insert(js)
}

// Waiters are the JobSets that waited for obj (For); it forgets them.
func (w *Waiting) Waiters(obj client.Object) []reconcile.Request {
	w.mu.Lock()
	defer w.mu.Unlock()
	key := client.ObjectKeyFromObject(obj)
	var out []reconcile.Request
	for js := range w.waiting[key] {
		out = append(out, reconcile.Request{NamespacedName: js})
	}
	delete(w.waiting, key)
	return out
}

// Forget forgets that the JobSet js waits for anything (it is gone, or found nothing to wait
// for), and says whether it waited for something: a JobSet that finds the objects it waited for
// gone, yet was not reconciled by their deletion (Gone ran between its read and For), can so
// tell that they went.
func (w *Waiting) Forget(js types.NamespacedName) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	waited := false
	for key, waiters := range w.waiting {
		if waiters.Has(js) {
			waited = true
		}
		if waiters.Delete(js); waiters.Len() == 0 {
			delete(w.waiting, key)
		}
	}
	return waited
}

// Gone is the handler of the deletions of the kind of objects the JobSets wait for: it
// reconciles each JobSet that waited for the deleted object (For), first calling also for it
// when also is set. It acts on the deletion only: while the object is terminating, it still
// holds the name.
func (w *Waiting) Gone(also func(reconcile.Request)) handler.EventHandler {
	return handler.Funcs{DeleteFunc: func(_ context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		for _, req := range w.Waiters(e.Object) {
			if also != nil {
				also(req)
			}
			q.Add(req)
		}
	}}
}
