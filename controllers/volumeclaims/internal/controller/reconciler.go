// Package controller is the volumeclaims reconciler: it creates the PVCs a JobSet's policies ask
// for as soon as the JobSet is admitted, reuses those that exist, and deletes them by retention.
package controller

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/controllers/volumeclaims/internal/policy"
	"github.com/jobset-addons/jobset-addons/pkg/addon"
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

	// pending holds, per JobSet, the PVCs created or found (a user's) that the cache does not
	// show yet, so that a reconcile that runs before the cache has caught up does not create
	// them again. A name leaves it once the cache shows the PVC, so a PVC of ours that someone
	// deletes while the JobSet runs is created again.
	mu      sync.Mutex
	pending map[types.NamespacedName]*pendingClaims
}

type pendingClaims struct {
	uid types.UID
	// names are created or found but not in the cache yet; seen were all accounted for
	// (created or reused), so that reuse is told once.
	names, seen sets.Set[string]
	// terminating are PVCs that retention deleted and that were seen Terminating; held, those
	// of them told as held (VolumeClaimsHeld), so that each is told once and its end too.
	terminating, held sets.Set[string]
}

// SetupWithManager registers the reconciler for JobSets with policies, and for changes of the
// PVCs it manages.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, concurrency int) error {
	hasPolicies := predicate.NewPredicateFuncs(func(o client.Object) bool {
		js, ok := o.(*jobsetv1alpha2.JobSet)
		return ok && policy.Uses(js)
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named("volumeclaims").
		WatchesRawSource(addon.For(mgr, &jobsetv1alpha2.JobSet{}, hasPolicies)).
		WatchesRawSource(addon.Watches(mgr, &corev1.PersistentVolumeClaim{}, handler.EnqueueRequestsFromMapFunc(jobSetOfClaim))).
		WithOptions(controller.Options{MaxConcurrentReconciles: concurrency}).
		Complete(r)
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
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	start := time.Now()
	defer func() { reconcileDuration.Observe(time.Since(start).Seconds()) }()

	js := &jobsetv1alpha2.JobSet{}
	if err := r.Client.Get(ctx, req.NamespacedName, js); err != nil {
		if apierrors.IsNotFound(err) {
			r.forget(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	log := ctrl.LoggerFrom(ctx).WithValues("jobset", klog.KObj(js))
	ctx = ctrl.LoggerInto(ctx, log)
	if !js.DeletionTimestamp.IsZero() {
		log.V(2).Info("Skipping a JobSet being deleted", "uid", js.UID)
		r.forget(req.NamespacedName) // whenDeleted is the garbage collector's, by owner reference
		return ctrl.Result{}, nil
	}
	policies, ok, errs := policy.Parse(js)
	if !ok {
		return ctrl.Result{}, nil
	}
	if len(errs) > 0 {
		reconcileErrors.WithLabelValues("invalid").Inc()
		r.Recorder.Eventf(js, nil, corev1.EventTypeWarning, ReasonInvalid, actionSkip, "Ignoring the volume claim policies: %v", errs.ToAggregate())
		return ctrl.Result{}, nil
	}
	if js.Annotations[contract.VolumeClaimsAdmittedAnnotationKey] != contract.EnabledValue {
		r.Recorder.Eventf(js, nil, corev1.EventTypeWarning, ReasonNotAdmitted, actionSkip,
			"The JobSet was created while the volumeclaims webhook was not running: its pods do not mount the claims, so none are created or deleted; re-create the JobSet")
		return ctrl.Result{}, nil
	}
	claims, errs := policy.Claims(js, policies)
	if len(errs) > 0 {
		reconcileErrors.WithLabelValues("invalid").Inc()
		r.Recorder.Eventf(js, nil, corev1.EventTypeWarning, ReasonInvalid, actionSkip, "Ignoring the volume claim policies: %v", errs.ToAggregate())
		return ctrl.Result{}, nil
	}

	var owned corev1.PersistentVolumeClaimList
	if err := r.Client.List(ctx, &owned, client.InNamespace(js.Namespace), client.MatchingLabels{
		contract.ManagedByLabelKey:  contract.VolumeClaimsManagedByValue,
		contract.JobSetNameLabelKey: js.Name,
	}); err != nil {
		reconcileErrors.WithLabelValues("list").Inc()
		return ctrl.Result{}, fmt.Errorf("listing PVCs: %w", err)
	}
	existing := make(map[string]*corev1.PersistentVolumeClaim, len(owned.Items))
	for i := range owned.Items {
		existing[owned.Items[i].Name] = &owned.Items[i]
	}
	claims = append(claims, scaledDown(js.Name, claims, existing)...)

	st := stateOf(js)
	log.V(2).Info("Reconciling", "uid", js.UID, "claims", len(claims), "existing", len(existing), "completed", st.completed, "failed", st.failed)
	var ensure, remove, dropped []policy.Claim
	for _, c := range claims {
		switch st.action(c) {
		case keep:
			ensure = append(ensure, c)
		case drop:
			dropped = append(dropped, c)
			if pvc, ok := existing[c.Name]; ok && pvc.DeletionTimestamp.IsZero() {
				remove = append(remove, c)
			}
		}
	}
	res, err := r.release(ctx, js, dropped, existing)
	return res, errors.Join(r.ensure(ctx, js, ensure, existing), r.remove(ctx, js, remove, existing), err)
}

// ensure creates the claims that do not exist, and adopts (owner reference for whenDeleted
// Delete) the add-on's PVCs that an earlier JobSet of the same name left.
func (r *Reconciler) ensure(ctx context.Context, js *jobsetv1alpha2.JobSet, claims []policy.Claim, existing map[string]*corev1.PersistentVolumeClaim) error {
	key := client.ObjectKeyFromObject(js)
	pending, seen := r.pendingFor(key, js.UID)
	var created, reused, failed result
	r.parallel(ctx, len(claims), func(i int) {
		c := claims[i]
		if pvc, ok := existing[c.Name]; ok {
			if c.Retention.WhenDeleted == contract.RetentionPolicyDelete && !ownedBy(pvc, js) {
				patch := client.MergeFrom(pvc.DeepCopy())
				pvc.OwnerReferences = append(pvc.OwnerReferences, policy.OwnerReference(js))
				if err := r.Client.Patch(ctx, pvc, patch); err != nil {
					failed.add(c.Name, fmt.Errorf("adopting %s: %w", c.Name, err))
					reconcileErrors.WithLabelValues("adopt").Inc()
					return
				}
			}
			if !seen.Has(c.Name) && pvc.Annotations[contract.VolumeClaimJobSetUIDAnnotationKey] != string(js.UID) {
				reused.add(c.Name, nil)
				claimsReused.WithLabelValues(scope(c.Shared())).Inc()
			}
			r.settle(key, c.Name)
			return
		}
		if pending.Has(c.Name) {
			return // created or found by an earlier reconcile; the cache has not shown it yet
		}
		err := r.Client.Create(ctx, c.PVC(js))
		switch {
		case err == nil:
			created.add(c.Name, nil)
			claimsCreated.WithLabelValues(scope(c.Shared())).Inc()
		case apierrors.IsAlreadyExists(err):
			// A PVC of this name that the add-on does not manage: the user's. It is mounted as
			// it is, never changed and never deleted.
			reused.add(c.Name, nil)
			claimsReused.WithLabelValues(scope(c.Shared())).Inc()
		default:
			failed.add(c.Name, fmt.Errorf("creating %s: %w", c.Name, err))
			reconcileErrors.WithLabelValues("create").Inc()
			return
		}
		r.remember(key, c.Name)
	})
	if n := created.count(); n > 0 {
		ctrl.LoggerFrom(ctx).Info("Created PVCs", "count", n)
		r.Recorder.Eventf(js, created.related(js), corev1.EventTypeNormal, ReasonCreated, actionCreate, "Created %d PersistentVolumeClaims: %s", n, created.names())
	}
	if n := reused.count(); n > 0 {
		r.Recorder.Eventf(js, reused.related(js), corev1.EventTypeNormal, ReasonReused, actionReuse, "Using %d PersistentVolumeClaims that already existed: %s", n, reused.names())
	}
	return failed.report(js, r.Recorder, actionCreate)
}

// remove deletes the add-on's PVCs that retention no longer keeps.
func (r *Reconciler) remove(ctx context.Context, js *jobsetv1alpha2.JobSet, claims []policy.Claim, existing map[string]*corev1.PersistentVolumeClaim) error {
	var deleted, failed result
	r.parallel(ctx, len(claims), func(i int) {
		c := claims[i]
		pvc := existing[c.Name]
		// The list only holds PVCs with the add-on's managed-by label and this JobSet's name:
		// a user's PVC of the same name is never among them. The UID precondition makes sure
		// the PVC deleted is the one looked at.
		err := r.Client.Delete(ctx, pvc, client.Preconditions{UID: &pvc.UID})
		if err != nil && !apierrors.IsNotFound(err) {
			failed.add(c.Name, fmt.Errorf("deleting %s: %w", c.Name, err))
			reconcileErrors.WithLabelValues("delete").Inc()
			return
		}
		deleted.add(c.Name, nil)
		claimsDeleted.WithLabelValues(scope(c.Shared())).Inc()
	})
	if n := deleted.count(); n > 0 {
		ctrl.LoggerFrom(ctx).Info("Deleted PVCs by retention", "count", n)
		r.Recorder.Eventf(js, deleted.related(js), corev1.EventTypeNormal, ReasonDeleted, actionDelete, "Deleted %d PersistentVolumeClaims by retention: %s", n, deleted.names())
	}
	return failed.report(js, r.Recorder, actionDelete)
}

// parallel runs fn for 0..n-1, r.Workers at a time.
func (r *Reconciler) parallel(ctx context.Context, n int, fn func(i int)) {
	workqueue.ParallelizeUntil(ctx, max(r.Workers, 1), n, fn)
}

func ownedBy(pvc *corev1.PersistentVolumeClaim, js *jobsetv1alpha2.JobSet) bool {
	for _, ref := range pvc.OwnerReferences {
		if ref.UID == js.UID {
			return true
		}
	}
	return false
}

// pendingFor returns the pending and seen names of the JobSet key, forgetting those of an
// earlier JobSet of the same name.
func (r *Reconciler) pendingFor(key types.NamespacedName, uid types.UID) (pending, seen sets.Set[string]) {
	r.mu.Lock()
	defer r.mu.Unlock()
	p := r.stateFor(key, uid)
	return p.names.Clone(), p.seen.Clone()
}

// stateFor returns what is remembered of the JobSet key, new if it was of an earlier JobSet of
// the same name. r.mu is held.
func (r *Reconciler) stateFor(key types.NamespacedName, uid types.UID) *pendingClaims {
	if r.pending == nil {
		r.pending = map[types.NamespacedName]*pendingClaims{}
	}
	p := r.pending[key]
	if p != nil && p.uid != uid {
		claimsHeld.Sub(float64(p.terminating.Len()))
	}
	if p == nil || p.uid != uid {
		p = &pendingClaims{uid: uid, names: sets.New[string](), seen: sets.New[string](), terminating: sets.New[string](), held: sets.New[string]()}
		r.pending[key] = p
	}
	return p
}

func (r *Reconciler) remember(key types.NamespacedName, name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if p := r.pending[key]; p != nil {
		p.names.Insert(name)
		p.seen.Insert(name)
	}
}

// settle drops name from the pending names: the cache shows it.
func (r *Reconciler) settle(key types.NamespacedName, name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if p := r.pending[key]; p != nil {
		p.names.Delete(name)
		p.seen.Insert(name)
	}
}

func (r *Reconciler) forget(key types.NamespacedName) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if p := r.pending[key]; p != nil {
		claimsHeld.Sub(float64(p.terminating.Len()))
	}
	delete(r.pending, key)
}

// state is what the JobSet's status says for retention.
type state struct {
	completed, failed bool
	// succeeded: ReplicatedJobs all of whose Jobs succeeded.
	succeeded sets.Set[string]
}

func stateOf(js *jobsetv1alpha2.JobSet) state {
	st := state{
		completed: apimeta.IsStatusConditionTrue(js.Status.Conditions, string(jobsetv1alpha2.JobSetCompleted)),
		failed:    apimeta.IsStatusConditionTrue(js.Status.Conditions, string(jobsetv1alpha2.JobSetFailed)),
		succeeded: sets.New[string](),
	}
	for _, s := range js.Status.ReplicatedJobsStatus {
		if rj := policy.ReplicatedJob(js, s.Name); rj != nil && s.Succeeded >= rj.Replicas {
			st.succeeded.Insert(s.Name)
		}
	}
	return st
}

type action int

const (
	keep  action = iota // the claim must exist
	drop                // retention deletes it
	leave               // finished, retained: neither created nor deleted
)

// action decides for one claim. A shared claim lives until the JobSet completes or fails; a
// per-pod claim until every targeted ReplicatedJob succeeded, or the JobSet completed or
// failed for good. A failed Job that the JobSet restarts is not a failure: the JobSet is
// not Failed, and its claims stay (checkpoints survive restarts).
func (st state) action(c policy.Claim) action {
	done, failed := st.completed, st.failed
	if !c.Shared() && !done && !failed {
		done = true
		for _, t := range c.Targets {
			done = done && st.succeeded.Has(t)
		}
	}
	switch {
	case failed && c.Retention.WhenFailed == contract.RetentionPolicyDelete:
		return drop
	case done && !failed && c.Retention.WhenComplete == contract.RetentionPolicyDelete:
		return drop
	case done || failed:
		return leave
	}
	return keep
}

// result collects the names (of PVCs, or pods) of one kind of outcome of a parallel step.
type result struct {
	mu     sync.Mutex
	claims []string
	errs   []error
}

func (r *result) add(name string, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.claims = append(r.claims, name)
	if err != nil {
		r.errs = append(r.errs, err)
	}
}

func (r *result) count() int { return len(r.claims) }

// related is the first PVC of the result, the Event's related object. The events API folds
// Events of one regarding object, related object, reason and action into a series that keeps
// the first note; PVCs told of in one Event are never told of again, so each such Event starts
// a series of its own.
func (r *result) related(js *jobsetv1alpha2.JobSet) runtime.Object {
	if len(r.claims) == 0 {
		return nil
	}
	return claimRef(js, r.claims[0])
}

// names lists up to 10 names, for an event message.
func (r *result) names() string {
	const most = 10
	if len(r.claims) <= most {
		return strings.Join(r.claims, ", ")
	}
	return strings.Join(r.claims[:most], ", ") + fmt.Sprintf(" and %d more", len(r.claims)-most)
}

// names lists up to 10 entries, for an Event message.
func names(list []string) string {
	r := result{claims: list}
	return r.names()
}

// report emits one Warning for the failures and returns them joined, so the reconcile retries.
func (r *result) report(js *jobsetv1alpha2.JobSet, rec events.EventRecorder, act string) error {
	if len(r.errs) == 0 {
		return nil
	}
	err := errors.Join(r.errs...)
	rec.Eventf(js, r.related(js), corev1.EventTypeWarning, ReasonFailed, act, "%d PersistentVolumeClaims failed: %v", len(r.errs), r.errs[0])
	return err
}
