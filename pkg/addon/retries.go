package addon

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
)

// Retries holds the JobSets to nudge: an add-on's Job webhook refused (DenyTakenJob) one of
// their Jobs while an object of a name it needs was another JobSet's, and that object is gone
// (Add, as Waiting.Gone's also). JobSet creates (or resumes) a refused Job again only at its
// next reconcile, after a back-off that the refusals have made long (up to some 16 minutes);
// Retry, in the add-on's next reconcile of the JobSet, once its own objects are made, has
// JobSet's controller reconcile it at once. The zero value is empty and ready to use.
type Retries struct {
	mu  sync.Mutex
	set sets.Set[types.NamespacedName]
}

// Add records that the JobSet of req is to be nudged.
func (r *Retries) Add(req reconcile.Request) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.set == nil {
		r.set = sets.New[types.NamespacedName]()
	}
	r.set.Insert(req.NamespacedName)
}

// Forget says whether the JobSet js was to be nudged, and forgets it (it is nudged, or gone).
func (r *Retries) Forget(js types.NamespacedName) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.set.Has(js) {
		return false
	}
	r.set.Delete(js)
	return true
}

// Retry nudges js if it is to be (Add), once: it writes the annotation key (the add-on's, in
// package contract), the time now, on js. JobSet's controller reconciles a JobSet on every
// change to it, so the write has it create (or resume) the refused Job now. A JobSet of the same
// name made meanwhile is not written (the patch carries js's UID, which may not change). When
// the write fails, js is kept, for the reconcile's retry, and the error returned.
func (r *Retries) Retry(ctx context.Context, c client.Client, js *jobsetv1alpha2.JobSet, key string) error {
	name := client.ObjectKeyFromObject(js)
	if !r.Forget(name) {
		return nil
	}
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"uid": js.UID, "annotations": map[string]string{
		key: time.Now().UTC().Format(time.RFC3339Nano),
	}}})
	obj := &jobsetv1alpha2.JobSet{ObjectMeta: metav1.ObjectMeta{Namespace: js.Namespace, Name: js.Name}}
	if err := c.Patch(ctx, obj, client.RawPatch(types.MergePatchType, patch)); client.IgnoreNotFound(err) != nil {
		r.Add(reconcile.Request{NamespacedName: name})
		return fmt.Errorf("asking JobSet to create its Jobs again: %w", err)
	}
	ctrl.LoggerFrom(ctx).V(1).Info("Asked JobSet to create its Jobs again: an object of a name they need, another JobSet's, is gone")
	return nil
}
