package addon

import (
	"context"
	"fmt"
	"sync"

	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// For is the source of a controller's own objects (the builder's For): each enqueues itself.
func For(mgr ctrl.Manager, obj client.Object, preds ...predicate.Predicate) source.SyncingSource {
	return Watches(mgr, obj, &handler.EnqueueRequestForObject{}, preds...)
}

// Owns is the source of the objects a controller makes (the builder's Owns): each enqueues its
// controller, of owner's kind.
func Owns(mgr ctrl.Manager, owner, obj client.Object, preds ...predicate.Predicate) source.SyncingSource {
	return Watches(mgr, obj, handler.EnqueueRequestForOwner(mgr.GetScheme(), mgr.GetRESTMapper(), owner, handler.OnlyControllerOwner()), preds...)
}

// Watches is the source of obj's events, from the manager's cache, through h (the builder's
// Watches). Add it with the builder's WatchesRawSource. Unlike controller-runtime's own source:
//   - its informer starts with the manager's cache, before the Lease is taken, not after: a
//     replica waiting for the Lease holds a synced cache, and a process that takes a free Lease
//     lists while it does;
//   - its controller starts its workers the moment the informer and the handler have seen every
//     object (client-go's WaitFor), where the builder's sources poll for both every 100 ms.
//
// Both were most of a restart's time to its first object (make bench ADDON=podgroups, cold start).
func Watches(mgr ctrl.Manager, obj client.Object, h handler.EventHandler, preds ...predicate.Predicate) source.SyncingSource {
	w := &watch{cache: mgr.GetCache(), obj: obj, handler: h, preds: preds}
	// Made now, the informer is started by the cache; an error is told by Start.
	_, _ = w.cache.GetInformer(context.Background(), obj, cache.BlockUntilSynced(false))
	return w
}

type watch struct {
	cache   cache.Cache
	obj     client.Object
	handler handler.EventHandler
	preds   []predicate.Predicate

	mu       sync.Mutex
	informer cache.Informer
	handled  toolscache.ResourceEventHandlerRegistration
}

// Start registers the handler on the informer, started if it is not, without waiting for it.
func (w *watch) Start(ctx context.Context, queue workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
	informer, err := w.cache.GetInformer(ctx, w.obj, cache.BlockUntilSynced(false))
	if err != nil {
		return fmt.Errorf("getting the informer of %T: %w", w.obj, err)
	}
	return (&source.Informer{Informer: registering{Informer: informer, w: w}, Handler: w.handler, Predicates: w.preds}).Start(ctx, queue)
}

// registering is an informer that hands each handler registered on it to its watch, which
// WaitForSync then waits on.
type registering struct {
	cache.Informer
	w *watch
}

func (r registering) AddEventHandlerWithOptions(h toolscache.ResourceEventHandler, o toolscache.HandlerOptions) (toolscache.ResourceEventHandlerRegistration, error) {
	reg, err := r.Informer.AddEventHandlerWithOptions(h, o)
	if err == nil {
		r.w.mu.Lock()
		r.w.informer, r.w.handled = r.Informer, reg
		r.w.mu.Unlock()
	}
	return reg, err
}

// WaitForSync returns once the informer has listed every object and the handler has been
// given each, or when ctx ends.
func (w *watch) WaitForSync(ctx context.Context) error {
	w.mu.Lock()
	informer, handled := w.informer, w.handled
	w.mu.Unlock()
	if handled == nil {
		return fmt.Errorf("the source of %T was not started", w.obj)
	}
	if !toolscache.WaitFor(ctx, "", informer.HasSyncedChecker(), handled.HasSyncedChecker()) {
		return fmt.Errorf("the cache of %T did not sync: %w", w.obj, ctx.Err())
	}
	return nil
}

func (w *watch) String() string { return fmt.Sprintf("watch of %T", w.obj) }
