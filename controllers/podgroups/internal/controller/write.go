package controller

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/controllers/podgroups/internal/backend"
	"github.com/jobset-addons/jobset-addons/pkg/addon"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// written says what write did.
type written int

const (
	unchanged written = iota
	created
	updated
	notOurs
	// replaced: ours, with something the API lets not change (a PodGroup's claims) other than
	// want's; deleted, to be made again once gone.
	replaced
	// namespaceGoing: not made, the namespace being deleted (addon.NamespaceTerminating): the
	// JobSet goes with it, and nothing is retried or made after it.
	namespaceGoing
	// madeFirst: ours, made by the Job webhook for a Job that came first (addon.MadeFirst), found
	// now: told as created (and brought to want, if it differs).
	madeFirst
)

// kind is how write makes, reads and changes objects of one kind T: kind names them in errors,
// made remembers what was created, first tells those the Job webhook made, newObj is an empty one, adopt brings one of ours on the
// server (have) to want, and replace (if set) tells whether adopt cannot.
type kind[T client.Object] struct {
	name    string
	made    *addon.Made
	first   addon.MadeFirst
	newObj  func() T
	adopt   func(have, want T)
	replace func(have, want T) bool
}

// write creates want, or, when have (ours: its metadata from the cache, or nil) carries another
// spec hash than want, brings it to want through k.adopt, starting from the whole object as the
// apiserver has it; or deletes it when k.replace says adopt cannot. It returns the object as
// created, or as read and changed.
func write[T client.Object](ctx context.Context, r *Reconciler, js *jobsetv1alpha2.JobSet, k kind[T], want T, have client.Object) (written, T, error) {
	var none T
	wantHash := want.GetAnnotations()[contract.PodGroupSpecHashAnnotationKey]
	whole, read := k.newObj(), false
	if have == nil {
		did, got, exists, err := create(ctx, r, js, k, want, whole)
		if !exists {
			return did, got, err
		}
		have, read = whole, true
	}
	first := k.first.Tell(js.UID, have)
	if first {
		addon.CountObject(k.name, addon.ActionCreated, 1)
	}
	if have.GetAnnotations()[contract.PodGroupSpecHashAnnotationKey] == wantHash && !first {
		return unchanged, none, nil
	}
	if !read {
		// The cache holds metadata only: the change starts from the whole object as it is.
		if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(want), whole); err != nil {
			return unchanged, none, client.IgnoreNotFound(err) // deleted meanwhile: the delete event brings us back
		}
		if !backend.Ours(whole, js) {
			return unchanged, none, nil // changed meanwhile: its event brings us back
		}
	}
	if whole.GetAnnotations()[contract.PodGroupSpecHashAnnotationKey] == wantHash {
		if first {
			return madeFirst, whole, nil
		}
		return unchanged, none, nil // changed meanwhile: its event brings us back
	}
	if terminating(whole) {
		return unchanged, none, nil // deleted, held by a finalizer: its removal brings us back
	}
	if k.replace != nil && k.replace(whole, want) {
		if deleted, err := r.remove(ctx, k.name, have); !deleted {
			return unchanged, none, err
		}
		return replaced, whole, nil
	}
	did, got, err := update(ctx, r, k, whole, want)
	if first && did == updated {
		did = madeFirst
	}
	return did, got, err
}

// create creates want. When an object of its name exists, it reads it into whole: exists says
// it is ours (not in the cache yet), and write goes on from it; notOurs, someone else's.
func create[T client.Object](ctx context.Context, r *Reconciler, js *jobsetv1alpha2.JobSet, k kind[T], want, whole T) (did written, got T, exists bool, err error) {
	var none T
	err = r.Client.Create(ctx, want)
	switch {
	case err == nil:
		k.made.Created(want)
		k.first.Made(js.UID, want.GetName())
		addon.CountObject(k.name, addon.ActionCreated, 1)
		return created, want, false, nil
	case addon.NamespaceTerminating(err):
		return namespaceGoing, none, false, nil
	case !apierrors.IsAlreadyExists(err):
		reconcileErrors.WithLabelValues("create").Inc()
		addon.CountObject(k.name, addon.ActionFailed, 1)
		return unchanged, none, false, fmt.Errorf("creating %s %s: %w", k.name, want.GetName(), err)
	}
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(want), whole); err != nil {
		return unchanged, none, false, client.IgnoreNotFound(err)
	}
	if !backend.Ours(whole, js) {
		return notOurs, whole, false, nil
	}
	return unchanged, none, true, nil
}

// update brings whole (ours, as the apiserver has it) to want through k.adopt, and returns it
// as changed.
func update[T client.Object](ctx context.Context, r *Reconciler, k kind[T], whole, want T) (written, T, error) {
	var none T
	patchBase := whole.DeepCopyObject().(client.Object)
	k.adopt(whole, want)
	if err := r.Client.Patch(ctx, whole, client.MergeFrom(patchBase)); err != nil {
		if apierrors.IsNotFound(err) {
			return unchanged, none, nil // deleted meanwhile: the delete event brings us back
		}
		reconcileErrors.WithLabelValues("update").Inc()
		addon.CountObject(k.name, addon.ActionFailed, 1)
		return unchanged, none, fmt.Errorf("updating %s %s: %w", k.name, want.GetName(), err)
	}
	addon.CountObject(k.name, addon.ActionUpdated, 1)
	return updated, whole, nil
}

// terminating tells whether o (nil: none) was deleted and waits on a finalizer.
func terminating(o client.Object) bool {
	return o != nil && !o.GetDeletionTimestamp().IsZero()
}

// going tells whether o is on its way out: deleted, as the cache shows or as this process did
// and the cache does not show yet.
func (r *Reconciler) going(o client.Object) bool {
	return terminating(o) || (o != nil && r.deleted.Pending(o))
}

// remove deletes one of our objects (as the cache shows it, or as read), with a UID
// precondition: never a newer one of the name. It tells whether it deleted it (not when it was
// gone already or replaced).
func (r *Reconciler) remove(ctx context.Context, kind string, o client.Object) (bool, error) {
	uid := o.GetUID()
	if err := r.Client.Delete(ctx, deletable(o), client.Preconditions{UID: &uid}); err != nil {
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			return false, nil
		}
		reconcileErrors.WithLabelValues("delete").Inc()
		addon.CountObject(kind, addon.ActionFailed, 1)
		return false, fmt.Errorf("deleting %s %s: %w", kind, o.GetName(), err)
	}
	r.deleted.Wrote(o)
	addon.CountObject(kind, addon.ActionDeleted, 1)
	return true, nil
}

// deletable is o as the client deletes it. An object known by its metadata alone (a
// CompositePodGroup, of no Go type here) goes as unstructured: the apiserver answers a delete
// with the object deleted, which the typed client decodes by the scheme, and a kind the scheme
// does not hold in a version it holds (CompositePodGroup of scheduling.k8s.io/v1beta1, beside
// its PodGroup and Workload) fails there ("no kind ... is registered"), though deleted.
func deletable(o client.Object) client.Object {
	m, ok := o.(*metav1.PartialObjectMetadata)
	if !ok {
		return o
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(m.GroupVersionKind())
	u.SetNamespace(m.Namespace)
	u.SetName(m.Name)
	u.SetUID(m.UID)
	return u
}
