package controller

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/pkg/addon"
	"github.com/jobset-addons/jobset-addons/pkg/addon/checks/volumeclaims"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// PodClaimIndex is the field index of the manager's pod cache by the names of the PVCs a pod
// mounts (spec.volumes[].persistentVolumeClaim.claimName): the expiry's own clock finds a PVC's
// pods by it, with no request to the API server.
const PodClaimIndex = "spec.volumes.persistentVolumeClaim.claimName"

// PodClaims is the cache of pods the expiry's own clock reads: every pod, trimmed to what it
// reads (its name, the PVCs it mounts, its node and phase). Put it in Options.Cache for
// &corev1.Pod{}.
func PodClaims() cache.ByObject {
	return addon.Trimmed(cache.ByObject{}, func(obj any) {
		p, ok := obj.(*corev1.Pod)
		if !ok {
			return
		}
		var volumes []corev1.Volume
		for _, v := range p.Spec.Volumes {
			if v.PersistentVolumeClaim != nil {
				volumes = append(volumes, corev1.Volume{Name: v.Name, VolumeSource: corev1.VolumeSource{
					PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: v.PersistentVolumeClaim.ClaimName}}})
			}
		}
		*p = corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace, UID: p.UID, ResourceVersion: p.ResourceVersion, DeletionTimestamp: p.DeletionTimestamp},
			Spec:       corev1.PodSpec{Volumes: volumes, NodeName: p.Spec.NodeName},
			Status:     corev1.PodStatus{Phase: p.Status.Phase},
		}
	})
}

// claimsOfPod is PodClaimIndex's function.
func claimsOfPod(o client.Object) []string {
	var out []string
	for _, v := range o.(*corev1.Pod).Spec.Volumes {
		if v.PersistentVolumeClaim != nil {
			out = append(out, v.PersistentVolumeClaim.ClaimName)
		}
	}
	return out
}

// ownClockRecheck is how often a retained PVC with an expiry is looked at again where
// Kubernetes sets no Unused condition (the add-on then watches no pods, it looks), and how soon
// an expired PVC that a pod turned out to use is looked at again.
const ownClockRecheck = time.Minute

// Expiry deletes the add-on's retained PVCs whose retentionPolicy.expireAfterUnused has
// passed (contract.VolumeClaimExpiry). Everything it goes by is on the PVC (the annotations the
// add-on wrote, the Unused condition Kubernetes writes), so a restart loses nothing. A PVC is
// retained when its JobSet is gone or finished: while the JobSet runs (or waits: suspended,
// queued), its PVCs never expire.
type Expiry struct {
	// Client reads the add-on's PVCs, the JobSets and (without the Unused condition, at each
	// look) the pods that mount a PVC (PodClaimIndex) from the cache, and deletes.
	Client client.Client
	// Reader lists, from the API server, the pods of the PVC's namespace just before it is
	// deleted: data is never deleted on what a cache says.
	Reader   client.Reader
	Recorder events.EventRecorder
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// SetupWithManager registers the expiry for the add-on's PVCs with an expiry, and for changes
// of their JobSets (a JobSet that finishes or goes starts its PVCs' clocks), and the index of
// the pod cache by claim name (PodClaimIndex).
func (e *Expiry) SetupWithManager(ctx context.Context, mgr ctrl.Manager, concurrency int) error {
	if err := registerRetained(mgr.GetCache()); err != nil {
		return err
	}
	if err := mgr.GetFieldIndexer().IndexField(ctx, &corev1.Pod{}, PodClaimIndex, claimsOfPod); err != nil {
		return fmt.Errorf("indexing pods by claim name: %w", err)
	}
	hasExpiry := predicate.NewPredicateFuncs(func(o client.Object) bool {
		_, ok := o.GetAnnotations()[contract.VolumeClaimExpireAfterUnusedAnnotationKey]
		return ok
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named("volumeclaims-expiry").
		WatchesRawSource(addon.For(mgr, &corev1.PersistentVolumeClaim{}, hasExpiry)).
		WatchesRawSource(addon.Watches(mgr, &jobsetv1alpha2.JobSet{}, handler.EnqueueRequestsFromMapFunc(e.claimsOfJobSet), jobSetChanged)).
		WithOptions(controller.Options{MaxConcurrentReconciles: concurrency}).
		Complete(addon.Busy(e))
}

// claimsOfJobSet maps a JobSet to the add-on's PVCs of its name that have an expiry.
func (e *Expiry) claimsOfJobSet(ctx context.Context, o client.Object) []reconcile.Request {
	var list corev1.PersistentVolumeClaimList
	if err := e.Client.List(ctx, &list, client.InNamespace(o.GetNamespace()), client.MatchingLabels{
		contract.ManagedByLabelKey: contract.VolumeClaimsManagedByValue, contract.JobSetNameLabelKey: o.GetName(),
	}, client.UnsafeDisableDeepCopy); err != nil {
		return nil
	}
	var out []reconcile.Request
	for _, p := range list.Items {
		if _, ok := p.Annotations[contract.VolumeClaimExpireAfterUnusedAnnotationKey]; ok {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: p.Namespace, Name: p.Name}})
		}
	}
	return out
}

func (e *Expiry) now() time.Time {
	if e.Now != nil {
		return e.Now()
	}
	return time.Now()
}

// Reconcile deletes the PVC if it expired, or comes back when it will.
func (e *Expiry) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	pvc := &corev1.PersistentVolumeClaim{}
	if err := e.Client.Get(ctx, req.NamespacedName, pvc); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !expiring(pvc) {
		return ctrl.Result{}, nil
	}
	js, held, err := e.jobSet(ctx, pvc)
	if err != nil || held {
		return ctrl.Result{}, err // in its JobSet's hands: a change of the JobSet brings it back
	}
	if _, seen := contract.VolumeClaimFirstSeen(pvc); !seen {
		return e.firstSeen(ctx, pvc)
	}
	own := contract.UnusedCondition(pvc) == nil
	if own {
		if res, done, err := e.ownClock(ctx, pvc); done || err != nil {
			return res, err
		}
	}
	at, since, ok := contract.VolumeClaimExpiry(pvc)
	if !ok {
		return ctrl.Result{}, nil // in use: the Unused condition turning True brings it back
	}
	if wait := at.Sub(e.now()); wait > 0 {
		if own {
			wait = min(wait, ownClockRecheck) // no pod is watched: look again
		}
		return ctrl.Result{RequeueAfter: wait}, nil
	}
	return e.expire(ctx, pvc, js, since)
}

// expiring tells whether pvc is one the expiry may delete: the add-on's, with an expiry,
// Bound (Kubernetes says whether a Bound PVC is used), not being deleted.
func expiring(pvc *corev1.PersistentVolumeClaim) bool {
	_, ok := pvc.Annotations[contract.VolumeClaimExpireAfterUnusedAnnotationKey]
	return ok && pvc.Labels[contract.ManagedByLabelKey] == contract.VolumeClaimsManagedByValue &&
		pvc.DeletionTimestamp.IsZero() && pvc.Status.Phase == corev1.ClaimBound
}

// jobSet returns the JobSet of the PVC's name that uses the policies (nil when there is none),
// and whether a JobSet of that name holds the PVC: any that exists and is not being deleted,
// except one with the policies that finished. A JobSet without the policies may mount the PVC
// by its claimName (and be suspended, or queued); the add-on does not read what it mounts, so
// it holds the PVC while it exists.
func (e *Expiry) jobSet(ctx context.Context, pvc *corev1.PersistentVolumeClaim) (js *jobsetv1alpha2.JobSet, held bool, err error) {
	js = &jobsetv1alpha2.JobSet{}
	key := types.NamespacedName{Namespace: pvc.Namespace, Name: pvc.Labels[contract.JobSetNameLabelKey]}
	if err := e.Client.Get(ctx, key, js); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, false, nil
		}
		return nil, false, err
	}
	switch {
	case !js.DeletionTimestamp.IsZero():
		return nil, false, nil
	case !volumeclaims.Uses(js):
		return nil, true, nil
	}
	return js, !finished(js), nil
}

// firstSeen writes the add-on's first sight of the PVC (contract.VolumeClaimFirstSeen) on it:
// the clock starts no earlier. A PVC restored from a backup, whatever its annotations say, is
// a new object and is seen anew. The write brings the PVC back.
func (e *Expiry) firstSeen(ctx context.Context, pvc *corev1.PersistentVolumeClaim) (ctrl.Result, error) {
	patch := client.MergeFrom(pvc.DeepCopy())
	pvc.Annotations[contract.VolumeClaimFirstSeenAnnotationKey] = contract.VolumeClaimFirstSeenValue(e.now(), pvc.UID)
	if err := e.Client.Patch(ctx, pvc, patch); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	ctrl.LoggerFrom(ctx).V(2).Info("First sight of a retained PVC with an expiry", "pvc", pvc.Name)
	return ctrl.Result{}, nil
}

// finished tells whether the JobSet completed or failed.
func finished(js *jobsetv1alpha2.JobSet) bool {
	return apimeta.IsStatusConditionTrue(js.Status.Conditions, string(jobsetv1alpha2.JobSetCompleted)) ||
		apimeta.IsStatusConditionTrue(js.Status.Conditions, string(jobsetv1alpha2.JobSetFailed))
}

// ownClock keeps the add-on's clock of a PVC without the Unused condition: it looks whether a
// pod uses the PVC, and writes since when none does (or clears it). done: come back later.
func (e *Expiry) ownClock(ctx context.Context, pvc *corev1.PersistentVolumeClaim) (ctrl.Result, bool, error) {
	users, _, err := podsOf(ctx, e.Client, pvc, client.MatchingFields{PodClaimIndex: pvc.Name})
	if err != nil {
		return ctrl.Result{}, true, err
	}
	_, has := pvc.Annotations[contract.VolumeClaimUnusedSinceAnnotationKey]
	if (len(users) > 0) == !has {
		return ctrl.Result{RequeueAfter: ownClockRecheck}, len(users) > 0, nil
	}
	patch := client.MergeFrom(pvc.DeepCopy())
	if len(users) > 0 {
		delete(pvc.Annotations, contract.VolumeClaimUnusedSinceAnnotationKey)
	} else {
		pvc.Annotations[contract.VolumeClaimUnusedSinceAnnotationKey] = e.now().UTC().Format(time.RFC3339)
	}
	if err := e.Client.Patch(ctx, pvc, patch); err != nil {
		return ctrl.Result{}, true, err
	}
	return ctrl.Result{RequeueAfter: ownClockRecheck}, len(users) > 0, nil
}

// podsOf lists, with r, the pods of pvc's namespace (and opts) that mount it: users (not
// finished: they use it) and holders (finished, but ran with it: Kubernetes keeps a deleted PVC
// while they exist).
func podsOf(ctx context.Context, r client.Reader, pvc *corev1.PersistentVolumeClaim, opts ...client.ListOption) (users, holders []string, err error) {
	var pods corev1.PodList
	if err := r.List(ctx, &pods, append([]client.ListOption{client.InNamespace(pvc.Namespace)}, opts...)...); err != nil {
		return nil, nil, fmt.Errorf("listing the pods of %s: %w", pvc.Namespace, err)
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		if !mountsClaim(p, pvc.Name) {
			continue
		}
		switch {
		case p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed:
			users = append(users, p.Name)
		case p.Spec.NodeName != "":
			holders = append(holders, p.Name)
		}
	}
	return users, holders, nil
}

// mountsClaim tells whether the pod has a volume of the PVC name.
func mountsClaim(p *corev1.Pod, name string) bool {
	for _, v := range p.Spec.Volumes {
		if v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == name {
			return true
		}
	}
	return false
}

// expire deletes a PVC whose expiry passed, unless a pod uses it after all (the Unused
// condition may lag), and tells so on the PVC and on its JobSet, if there is one. The delete is
// conditional on the PVC being the one looked at, unchanged: a JobSet that took it in between
// (and restarted its clock) keeps it.
func (e *Expiry) expire(ctx context.Context, pvc *corev1.PersistentVolumeClaim, js *jobsetv1alpha2.JobSet, since time.Time) (ctrl.Result, error) {
	users, holders, err := podsOf(ctx, e.Reader, pvc)
	if err != nil {
		return ctrl.Result{}, err
	}
	if len(users) > 0 {
		ctrl.LoggerFrom(ctx).V(2).Info("Expired PVC in use, kept", "pvc", pvc.Name, "pods", users)
		return ctrl.Result{RequeueAfter: ownClockRecheck}, nil
	}
	uid, rv := pvc.UID, pvc.ResourceVersion
	err = e.Client.Delete(ctx, pvc, client.Preconditions{UID: &uid, ResourceVersion: &rv})
	switch {
	case apierrors.IsNotFound(err):
		return ctrl.Result{}, nil
	case apierrors.IsConflict(err):
		return ctrl.Result{Requeue: true}, nil
	case err != nil:
		reconcileErrors.WithLabelValues("delete").Inc()
		addon.CountObject(KindPVC, addon.ActionFailed, 1)
		return ctrl.Result{}, fmt.Errorf("deleting expired %s: %w", pvc.Name, err)
	}
	claimsExpired.Inc()
	addon.CountObject(KindPVC, addon.ActionDeleted, 1)
	note := expiredNote(pvc, since, e.now(), holders)
	ctrl.LoggerFrom(ctx).Info("Deleted an expired PVC", "pvc", pvc.Name, "unusedSince", since)
	e.Recorder.Eventf(pvc, nil, corev1.EventTypeNormal, ReasonExpired, actionDelete, "%s", addon.CutNote(note))
	if js != nil {
		addon.Tell(e.Recorder, js, claimRef(js, pvc.Name), corev1.EventTypeNormal, ReasonExpired, actionDelete, "PersistentVolumeClaim %s: %s", pvc.Name, note)
	}
	return ctrl.Result{}, nil
}

// expiredNote says why an expired PVC was deleted, and what still holds it.
func expiredNote(pvc *corev1.PersistentVolumeClaim, since, now time.Time, holders []string) string {
	note := fmt.Sprintf("Deleted: no pod used it for %s (since %s), and retentionPolicy.expireAfterUnused is %s; its data is gone",
		now.Sub(since).Round(time.Second), since.UTC().Format(time.RFC3339), pvc.Annotations[contract.VolumeClaimExpireAfterUnusedAnnotationKey])
	if len(holders) > 0 {
		note += fmt.Sprintf("; it stays Terminating, its storage held, while the %s that ran with it exist (%s)",
			plural(len(holders), "finished pod"), names(holders))
	}
	return strings.TrimSpace(note)
}
