// Package controller is the volumeclaims reconciler: it creates the PVCs a JobSet's policies ask
// for as soon as the JobSet is admitted, reuses those that exist, and deletes them by retention.
package controller

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
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

// Reconciler reconciles JobSets that carry the policies annotation.
type Reconciler struct {
	// Client reads JobSets and the add-on's own PVCs from the cache, and writes. A user's PVC
	// of a desired name is not in the cache: its creation collides (AlreadyExists).
	Client client.Client
	// Reader lists, from the API server, the pods that hold PVCs retention deleted: pods are
	// not cached, as they are needed only then.
	Reader   client.Reader
	Recorder events.EventRecorder
	// Workers is how many API calls one reconcile makes at once.
	Workers int

	// made holds the PVCs created that the cache does not show yet (written, the cache is
	// behind), so that a reconcile that runs before the cache has caught up does not create
	// them again. A PVC leaves it once the cache shows it, so a PVC of ours that someone
	// deletes while the JobSet runs is created again.
	made *addon.Made
	// told holds, per JobSet, the PVCs told as created, reused and held (VolumeClaimsHeld),
	// and the refusals told (addon.Refusals), so that each is told once.
	told addon.Told
	// first tells the PVCs the Pod webhook made (for a pod that came before the reconcile
	// that would have made its PVC) from those ensure made, so that each is told as created.
	first addon.MadeFirst

	mu     sync.Mutex
	claims map[types.NamespacedName]*jobSetClaims
	// waiting holds, per PVC that is another JobSet's (nameTaken), the JobSets of whose names
	// it is, which wait for it to go.
	waiting addon.Waiting
}

// SetupWithManager registers the reconciler for JobSets with policies, and for changes of the
// PVCs it manages (those that hold a JobSet's name for another JobSet reconcile the waiting
// JobSet as they go).
func (r *Reconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, concurrency int) error {
	r.first = addon.MadeFirst{Started: time.Now().Truncate(time.Second), Told: &r.told}
	if err := addon.ForgetGone(mgr, addon.DefaultForgetEvery, &r.told, &jobsetv1alpha2.JobSetList{}); err != nil {
		return err
	}
	var err error
	if r.made, err = addon.ObserveMade(ctx, mgr.GetCache(), &corev1.PersistentVolumeClaim{}); err != nil {
		return err
	}
	if err := registerHeld(mgr.GetCache()); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("volumeclaims").
		WatchesRawSource(addon.For(mgr, &jobsetv1alpha2.JobSet{}, hasPolicies(), jobSetChanged)).
		WatchesRawSource(addon.Watches(mgr, &corev1.PersistentVolumeClaim{}, handler.EnqueueRequestsFromMapFunc(jobSetOfClaim), claimChanged())).
		WatchesRawSource(addon.Watches(mgr, &corev1.PersistentVolumeClaim{}, r.waiting.Gone(nil))).
		WithOptions(controller.Options{MaxConcurrentReconciles: concurrency}).
		Complete(addon.Busy(r))
}

// hasPolicies passes the JobSets that carry the policies annotation.
func hasPolicies() predicate.Predicate {
	return predicate.NewPredicateFuncs(func(o client.Object) bool {
		js, ok := o.(*jobsetv1alpha2.JobSet)
		return ok && volumeclaims.Uses(js)
	})
}

// jobSetOfClaim maps one of the add-on's PVCs to its JobSet.
func jobSetOfClaim(_ context.Context, o client.Object) []reconcile.Request {
	name := o.GetLabels()[contract.JobSetNameLabelKey]
	if name == "" || o.GetLabels()[contract.ManagedByLabelKey] != contract.VolumeClaimsManagedByValue {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: name}}}
}

// Reconcile makes the JobSet's PVCs match its policies and its state.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, err error) {
	start := time.Now()
	defer func() { addon.ObserveReconcile(reconcileDuration, time.Since(start), err) }()

	ctx, js, ok, err := addon.ReconcileJobSet(ctx, r.Client, req.NamespacedName)
	if err != nil {
		return ctrl.Result{}, err
	}
	if !ok {
		r.forget(req.NamespacedName) // whenDeleted is the garbage collector's, by owner reference
		return ctrl.Result{}, nil
	}
	log := ctrl.LoggerFrom(ctx)
	policies, ok, errs := volumeclaims.Parse(js)
	if !ok {
		return ctrl.Result{}, nil
	}
	if len(errs) > 0 {
		reconcileErrors.WithLabelValues("invalid").Inc()
		addon.Tell(r.Recorder, js, nil, corev1.EventTypeWarning, ReasonInvalid, actionSkip, "Ignoring the volume claim policies: %v", errs.ToAggregate())
		return ctrl.Result{}, nil
	}
	if js.Annotations[contract.VolumeClaimsAdmittedAnnotationKey] != contract.EnabledValue {
		r.Recorder.Eventf(js, nil, corev1.EventTypeWarning, ReasonNotAdmitted, actionSkip,
			"The JobSet was created while the volumeclaims webhook was not running: its pods do not mount the claims, so none are created or deleted; re-create the JobSet")
		return ctrl.Result{}, nil
	}
	claims, errs := volumeclaims.Claims(js, policies)
	if len(errs) > 0 {
		reconcileErrors.WithLabelValues("invalid").Inc()
		addon.Tell(r.Recorder, js, nil, corev1.EventTypeWarning, ReasonInvalid, actionSkip, "Ignoring the volume claim policies: %v", errs.ToAggregate())
		return ctrl.Result{}, nil
	}

	// Before the cache is read: a PVC created by this process that arrives after the read is
	// then still pending.
	made := r.made.PendingNow()
	var owned corev1.PersistentVolumeClaimList
	// The cache's own objects, not copies (a reconcile of a JobSet of 2,000 PVCs copied them
	// all): read only; adopt copies the few it writes.
	if err := r.Client.List(ctx, &owned, client.InNamespace(js.Namespace), client.MatchingLabels{
		contract.ManagedByLabelKey:  contract.VolumeClaimsManagedByValue,
		contract.JobSetNameLabelKey: js.Name,
	}, client.UnsafeDisableDeepCopy); err != nil {
		reconcileErrors.WithLabelValues("list").Inc()
		return ctrl.Result{}, fmt.Errorf("listing PVCs: %w", err)
	}
	existing := make(map[string]*corev1.PersistentVolumeClaim, len(owned.Items))
	for i := range owned.Items {
		existing[owned.Items[i].Name] = &owned.Items[i]
	}
	claims = append(claims, scaledDown(js, claims, existing)...)

	st := stateOf(js)
	log.V(2).Info("Reconciling", "uid", js.UID, "claims", len(claims), "existing", len(existing), "completed", st.completed, "failed", st.failed)
	ensure, remove, dropped := st.sort(claims, existing)
	res, err := r.release(ctx, js, dropped, existing)
	return res, errors.Join(r.ensure(ctx, js, ensure, existing, made), r.remove(ctx, js, remove, existing), err)
}

// ensure creates the claims that do not exist, and adopts (adopt) the add-on's PVCs that an
// earlier JobSet of the same name left. made are the PVCs created that the cache did not show
// when the reconcile began.
func (r *Reconciler) ensure(ctx context.Context, js *jobsetv1alpha2.JobSet, claims []volumeclaims.Claim, existing map[string]*corev1.PersistentVolumeClaim, made sets.Set[types.NamespacedName]) error {
	users := r.usersOf(client.ObjectKeyFromObject(js), js.UID)
	var o ensured
	r.parallel(ctx, len(claims), func(i int) {
		c := claims[i]
		if pvc, ok := existing[c.Name]; ok {
			r.found(ctx, js, c, pvc, &o)
			return
		}
		if users.Has(c.Name) || made.Has(types.NamespacedName{Namespace: js.Namespace, Name: c.Name}) {
			return // a user's; or created by an earlier reconcile, and the cache has not shown it yet
		}
		if pvc := r.other(ctx, js.Namespace, c.Name); pvc != nil && c.Identity(js).Of(pvc) == contract.Foreign {
			// Another JobSet's, of this name (a create would say so only once the API server
			// lets it through: a quota refuses it first).
			o.taken.add(c.Name, r.nameTaken(js, c, pvc))
			return
		}
		r.create(ctx, js, c, &o)
	})
	r.tellEnsured(ctx, js, &o.created, &o.reused)
	return errors.Join(o.failed.report(js, r.Recorder, actionCreate), r.tellRefused(js, &o.refused), r.tellTaken(js, &o.taken))
}

// ensured gathers, from ensure's workers, what it did claim by claim.
type ensured struct {
	created, reused, failed, taken result
	refused                        addon.Refusals
}

// found decides about c's PVC, which the cache shows with the JobSet's name: another part's of
// the JobSet (taken), or its own, adopted (an earlier JobSet's: reused; one the Pod webhook
// made: told as created).
func (r *Reconciler) found(ctx context.Context, js *jobsetv1alpha2.JobSet, c volumeclaims.Claim, pvc *corev1.PersistentVolumeClaim, o *ensured) {
	if c.Identity(js).Of(pvc) == contract.Foreign {
		// This JobSet's name, another part of it (names are joined with "-").
		o.taken.add(c.Name, r.nameTaken(js, c, pvc))
		return
	}
	fromEarlier, err := r.adopt(ctx, js, c, pvc)
	if err != nil {
		o.failed.add(c.Name, fmt.Errorf("adopting %s: %w", c.Name, err))
		reconcileErrors.WithLabelValues("adopt").Inc()
		return
	}
	switch {
	case fromEarlier && r.told.Once(js.UID, c.Name):
		o.reused.add(c.Name, nil)
		claimsReused.WithLabelValues(scope(c.Shared())).Inc()
	case !fromEarlier && r.first.Tell(js.UID, pvc):
		o.created.add(c.Name, nil)
		claimsCreated.WithLabelValues(scope(c.Shared())).Inc()
	}
}

// create creates c's PVC, which the cache does not show.
func (r *Reconciler) create(ctx context.Context, js *jobsetv1alpha2.JobSet, c volumeclaims.Claim, o *ensured) {
	pvc := c.PVC(js)
	err := r.Client.Create(ctx, pvc)
	switch {
	case err == nil:
		r.made.Created(pvc)
		r.first.Made(js.UID, c.Name)
		o.created.add(c.Name, nil)
		claimsCreated.WithLabelValues(scope(c.Shared())).Inc()
		addon.CountObject(KindPVC, addon.ActionCreated, 1)
	case apierrors.IsAlreadyExists(err):
		r.exists(ctx, js, c, pvc, &o.reused, &o.taken)
	case addon.NamespaceTerminating(err):
		// The JobSet goes with its namespace: nothing to make, tell or retry.
	case addon.Classify(err) == addon.Refused:
		o.refused.Add(c.Template.Name, c.Name, err)
		reconcileErrors.WithLabelValues("refused").Inc()
		addon.CountObject(KindPVC, addon.ActionFailed, 1)
	default:
		o.failed.add(c.Name, fmt.Errorf("creating %s: %w", c.Name, err))
		reconcileErrors.WithLabelValues("create").Inc()
		addon.CountObject(KindPVC, addon.ActionFailed, 1)
	}
}

// other is the add-on's PVC of name in namespace that the cache holds for another JobSet (it
// lists only the JobSet's own by label), or nil.
func (r *Reconciler) other(ctx context.Context, namespace, name string) *corev1.PersistentVolumeClaim {
	pvc := &corev1.PersistentVolumeClaim{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, pvc); err != nil {
		return nil
	}
	return pvc
}

// exists decides about the PVC of c's name that exists and that the cache did not show
// (the create collided), read from the API server into pvc: made by an earlier reconcile
// (the cache is behind), a user's (mounted as it is, never changed or deleted: reused), or
// another JobSet's (taken: told, never mounted).
func (r *Reconciler) exists(ctx context.Context, js *jobsetv1alpha2.JobSet, c volumeclaims.Claim, pvc *corev1.PersistentVolumeClaim, reused, taken *result) {
	if err := r.Reader.Get(ctx, client.ObjectKeyFromObject(pvc), pvc); err != nil {
		return // gone meanwhile, or unreadable: the next reconcile looks again
	}
	switch c.Identity(js).Of(pvc) {
	case contract.Own, contract.Retained:
		// Made by an earlier reconcile (or JobSet of this name, for this very claim), longer
		// ago than the cache has shown it: the reconcile the cache brings adopts it.
		r.made.Created(pvc)
	case contract.Foreign:
		taken.add(c.Name, r.nameTaken(js, c, pvc))
	default:
		// A PVC of this name that the add-on does not manage: the user's. It is mounted as
		// it is, never changed and never deleted.
		r.foundUsers(client.ObjectKeyFromObject(js), c.Name)
		if r.told.Once(js.UID, c.Name) {
			reused.add(c.Name, nil)
			claimsReused.WithLabelValues(scope(c.Shared())).Inc()
		}
	}
}

// nameTaken records that the PVC of c's name is another JobSet's (or another part of this
// one's): an error that names it and whose it is, which has the reconcile retried, so that
// this JobSet's PVC is made once that one is gone; its deletion (addon.Waiting) reconciles this
// JobSet at once. Until then the pods that mount it are refused (the Pod webhook asks the
// same question) and wait.
func (r *Reconciler) nameTaken(js *jobsetv1alpha2.JobSet, c volumeclaims.Claim, pvc *corev1.PersistentVolumeClaim) error {
	reconcileErrors.WithLabelValues("name-taken").Inc()
	r.waiting.For(client.ObjectKeyFromObject(js), pvc)
	return fmt.Errorf("PersistentVolumeClaim %s (template %s) was made for %s", c.Name, c.Template.Name, c.Identity(js).Holder(pvc))
}

// tellTaken warns, in one Event, of the PVCs taken (nameTaken) not told yet for this JobSet.
func (r *Reconciler) tellTaken(js *jobsetv1alpha2.JobSet, taken *result) error {
	var first error
	n := 0
	for i, name := range taken.claims {
		if r.told.Once(js.UID, "taken\x00"+name) {
			if first == nil {
				first = taken.errs[i]
			}
			n++
		}
	}
	if n > 0 {
		addon.Tell(r.Recorder, js, taken.related(js), corev1.EventTypeWarning, ReasonNameTaken, actionSkip,
			"%d PersistentVolumeClaims of this JobSet's names exist and are not this JobSet's, so they are not mounted, changed or deleted, and the pods that mount them wait: %v. Rename the JobSet, the ReplicatedJob or the template, or delete those PVCs if their data is not needed",
			n, first)
	}
	return errors.Join(taken.errs...)
}

// tellEnsured tells the PVCs ensure created and those it found made already.
func (r *Reconciler) tellEnsured(ctx context.Context, js *jobsetv1alpha2.JobSet, created, reused *result) {
	if n := created.count(); n > 0 {
		ctrl.LoggerFrom(ctx).Info("Created PVCs", "count", n)
		addon.Tell(r.Recorder, js, created.related(js), corev1.EventTypeNormal, ReasonCreated, actionCreate, "Created %d PersistentVolumeClaims: %s", n, created.names())
	}
	if n := reused.count(); n > 0 {
		addon.Tell(r.Recorder, js, reused.related(js), corev1.EventTypeNormal, ReasonReused, actionReuse, "Using %d PersistentVolumeClaims that already existed: %s", n, reused.names())
	}
}

// remove deletes the add-on's PVCs that retention no longer keeps.
func (r *Reconciler) remove(ctx context.Context, js *jobsetv1alpha2.JobSet, claims []volumeclaims.Claim, existing map[string]*corev1.PersistentVolumeClaim) error {
	var deleted, failed result
	r.parallel(ctx, len(claims), func(i int) {
		c := claims[i]
		pvc := existing[c.Name]
		if c.Identity(js).Of(pvc) == contract.Foreign {
			return // another part's of a JobSet of this name: ensure told it
		}
		// The list only holds PVCs with the add-on's managed-by label and this JobSet's name:
		// a user's PVC of the same name is never among them. The UID precondition makes sure
		// the PVC deleted is the one looked at.
		err := r.Client.Delete(ctx, pvc, client.Preconditions{UID: &pvc.UID})
		if err != nil && !apierrors.IsNotFound(err) {
			failed.add(c.Name, fmt.Errorf("deleting %s: %w", c.Name, err))
			reconcileErrors.WithLabelValues("delete").Inc()
			addon.CountObject(KindPVC, addon.ActionFailed, 1)
			return
		}
		deleted.add(c.Name, nil)
		claimsDeleted.WithLabelValues(scope(c.Shared())).Inc()
		addon.CountObject(KindPVC, addon.ActionDeleted, 1)
	})
	if n := deleted.count(); n > 0 {
		ctrl.LoggerFrom(ctx).Info("Deleted PVCs by retention", "count", n)
		addon.Tell(r.Recorder, js, deleted.related(js), corev1.EventTypeNormal, ReasonDeleted, actionDelete, "Deleted %d PersistentVolumeClaims by retention: %s", n, deleted.names())
	}
	return failed.report(js, r.Recorder, actionDelete)
}

// parallel runs fn for 0..n-1, r.Workers at a time (fn records its own errors).
func (r *Reconciler) parallel(ctx context.Context, n int, fn func(i int)) {
	_ = addon.ForEach(ctx, r.Workers, n, func(i int) error { fn(i); return nil })
}

func ownedBy(pvc *corev1.PersistentVolumeClaim, js *jobsetv1alpha2.JobSet) bool {
	for _, ref := range pvc.OwnerReferences {
		if ref.UID == js.UID {
			return true
		}
	}
	return false
}
