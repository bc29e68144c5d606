// Package controller is the sequencer's gate-release reconciler: it removes the scheduling gate
// from the pods of a JobSet's waiting ReplicatedJobs once their predecessors are Complete or
// Ready in the current restart attempt, and records each release on the JobSet. The start
// barrier has a reconciler of its own (package barrier).
package controller

import (
	"context"
	"errors"
	"fmt"
	"sync"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/pkg/addon"
	"github.com/jobset-addons/jobset-addons/pkg/addon/checks/sequencer"
	"github.com/jobset-addons/jobset-addons/pkg/addon/jobsets"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// JobSetNameIndex indexes Jobs and Pods by their JobSet's name (jobsets.NameIndex).
const JobSetNameIndex = jobsets.NameIndex

// Reconciler reconciles JobSets that use the sequencer annotations.
type Reconciler struct {
	// Client reads JobSets, their Jobs and their gated Pods from the cache, and patches.
	Client   client.Client
	Recorder events.EventRecorder
	Clock    clock.Clock
	// Workers is how many pods one reconcile patches at once.
	Workers int

	mu sync.Mutex
	// released holds the pods released (written, the cache is behind) that the cache shows
	// still at the resourceVersion they were released from, so that a reconcile that runs
	// before the cache shows a release does not patch them again: on a starved apiserver the
	// cache showed a release more than 6 s after its patch was answered (make bench ADDON=scale).
	released *addon.Changed
	// warned holds the reason of the last Warning told per JobSet, so that one is told once.
	warned addon.Told
	// written holds, per JobSet, the released annotation this process last wrote, so that a
	// reconcile that runs before the cache shows it neither releases nor tells a stage twice.
	written map[types.NamespacedName]writtenReleased
}

type writtenReleased struct {
	uid      types.UID
	released contract.Released
}

// IndexFields registers the field indexes the reconciler lists by.
func IndexFields(ctx context.Context, mgr ctrl.Manager) error {
	if err := mgr.GetFieldIndexer().IndexField(ctx, &batchv1.Job{}, JobSetNameIndex, ByJobSet); err != nil {
		return fmt.Errorf("indexing Jobs: %w", err)
	}
	if err := mgr.GetFieldIndexer().IndexField(ctx, &corev1.Pod{}, JobSetNameIndex, ByJobSet); err != nil {
		return fmt.Errorf("indexing Pods: %w", err)
	}
	return nil
}

// ByJobSet is the value JobSetNameIndex indexes a Job or Pod by.
var ByJobSet = jobsets.IndexByName

// SetupWithManager registers the reconciler for JobSets that use the sequencer, for their Jobs
// (a Job's status change is what releases the next stage: it is reacted to directly, not
// through the JobSet's status) and for their gated Pods (pods created for a released stage).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, concurrency int) error {
	if err := addon.ForgetGone(mgr, addon.DefaultForgetEvery, &r.warned, &jobsetv1alpha2.JobSetList{}); err != nil {
		return err
	}
	uses := predicate.NewPredicateFuncs(func(o client.Object) bool {
		js, ok := o.(*jobsetv1alpha2.JobSet)
		return ok && sequencer.Sequences(js)
	})
	gatedPod := predicate.NewPredicateFuncs(func(o client.Object) bool {
		p, ok := o.(*corev1.Pod)
		return ok && sequencer.HasGate(p.Spec.SchedulingGates) && p.DeletionTimestamp == nil
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named("sequencer").
		WatchesRawSource(addon.For(mgr, &jobsetv1alpha2.JobSet{}, uses)).
		WatchesRawSource(addon.Watches(mgr, &batchv1.Job{}, handler.EnqueueRequestsFromMapFunc(jobsets.JobSetOf))).
		WatchesRawSource(addon.Watches(mgr, &corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(jobsets.JobSetOf), gatedPod)).
		WithOptions(controller.Options{MaxConcurrentReconciles: concurrency}).
		Complete(addon.Busy(r))
}

// Reconcile releases the stages whose predecessors hold, and their pods: read the stages, take
// back the releases of a suspended JobSet, decide from the JobSet's own Jobs what is released,
// ungate those pods, record the releases, then tell them. The pods first, straight from the
// Jobs' state: the hand-off waits for neither the annotation (and the JobSet webhooks it goes
// through) nor the JobSet's status. A crash in between loses nothing: the next reconcile
// derives the same releases from the Jobs.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, err error) {
	start := r.Clock.Now()
	defer func() { addon.ObserveReconcile(reconcileDuration, r.Clock.Since(start), err) }()

	ctx, js, ok, err := addon.ReconcileJobSet(ctx, r.Client, req.NamespacedName)
	if err != nil {
		return ctrl.Result{}, err
	}
	if !ok || !sequencer.Sequences(js) {
		r.forget(req.NamespacedName, js)
		return ctrl.Result{}, nil
	}
	stages, act := r.readStages(js)
	if !act {
		return ctrl.Result{}, nil
	}
	if ptr.Deref(js.Spec.Suspend, false) {
		ctrl.LoggerFrom(ctx).V(2).Info("Releasing nothing while the JobSet is suspended")
		return ctrl.Result{}, r.withdraw(ctx, js)
	}
	of, err := r.membersOf(ctx, js)
	if err != nil {
		return ctrl.Result{}, err
	}
	jobs, attempt := of.Jobs(), of.Attempt(js)
	prev, hadPrev := r.previous(js)
	d := decide(js, stages, prev, tally(jobs, attempt), attempt)
	ctrl.LoggerFrom(ctx).V(2).Info("Reconciling", "attempt", attempt, "released", d.released.ReplicatedJobs, "newly", len(d.newly))
	podErr := r.releasePods(ctx, js, of, sets.New(d.released.ReplicatedJobs...), attempt)
	annErr := r.recordReleased(ctx, js, d.released, hadPrev)
	if annErr == nil {
		r.tellReleased(ctx, js, jobs, d.newly, attempt, start, podErr == nil)
	}
	if err := errors.Join(podErr, annErr); err != nil {
		addon.Tell(r.Recorder, js, nil, corev1.EventTypeWarning, ReasonReleaseFailed, actionRelease, "Releasing failed: %v", err)
		return ctrl.Result{}, err
	}
	return ctrl.Result{}, nil
}

// forget drops what this process keeps about a JobSet that is gone or no longer sequenced.
func (r *Reconciler) forget(key types.NamespacedName, js *jobsetv1alpha2.JobSet) {
	if js != nil {
		r.warned.Forget(js.UID)
	}
	r.forgetWritten(key)
}

// readStages reads the JobSet's stages, and whether there is anything to act on: they parse
// (else a Warning, once), some stage is gated, and the webhook gated the pods (else a Warning).
func (r *Reconciler) readStages(js *jobsetv1alpha2.JobSet) ([]contract.Stage, bool) {
	stages, errs := sequencer.Stages(js)
	if len(errs) > 0 {
		r.warn(js, ReasonInvalid, "invalid", "Nothing is released: %v", errs.ToAggregate())
		return nil, false
	}
	if len(sequencer.GatedStages(stages)) == 0 {
		return nil, false
	}
	if !sequencer.Admitted(js, stages) {
		r.warn(js, ReasonNotAdmitted, "not-admitted",
			"The JobSet was created while the sequencer webhook was not running: its pods carry no scheduling gate and are not held back; re-create the JobSet")
		return nil, false
	}
	return stages, true
}

// membersOf are the Jobs the JobSet's controller made (jobsets.MembersOf): what decides which
// stages hold and which pods are released, never the labels a Job or pod carries.
func (r *Reconciler) membersOf(ctx context.Context, js *jobsetv1alpha2.JobSet) (jobsets.Members, error) {
	var jobs batchv1.JobList
	if err := r.Client.List(ctx, &jobs, client.InNamespace(js.Namespace), client.MatchingFields{JobSetNameIndex: js.Name}); err != nil {
		reconcileErrors.WithLabelValues("list").Inc()
		return nil, fmt.Errorf("listing Jobs: %w", err)
	}
	return jobsets.MembersOf(js, jobs.Items), nil
}
