// Package controller is the sequencer reconciler: it removes the scheduling gate from the pods
// of a JobSet's waiting ReplicatedJobs once their predecessors are Complete or Ready in the
// current restart attempt, and records each release on the JobSet.
package controller

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
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

	"github.com/jobset-addons/jobset-addons/controllers/sequencer/internal/sequence"
	"github.com/jobset-addons/jobset-addons/pkg/addon"
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

// ByJobSet is the JobSetNameIndex of a Job or Pod.
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
		return ok && sequence.Sequences(js)
	})
	gatedPod := predicate.NewPredicateFuncs(func(o client.Object) bool {
		p, ok := o.(*corev1.Pod)
		return ok && sequence.HasGate(p.Spec.SchedulingGates) && p.DeletionTimestamp == nil
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named("sequencer").
		WatchesRawSource(addon.For(mgr, &jobsetv1alpha2.JobSet{}, uses)).
		WatchesRawSource(addon.Watches(mgr, &batchv1.Job{}, handler.EnqueueRequestsFromMapFunc(jobsets.JobSetOf))).
		WatchesRawSource(addon.Watches(mgr, &corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(jobsets.JobSetOf), gatedPod)).
		WithOptions(controller.Options{MaxConcurrentReconciles: concurrency}).
		Complete(addon.Busy(r))
}

// Reconcile releases the stages whose predecessors hold, and their pods.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, err error) {
	start := r.Clock.Now()
	defer func() { addon.ObserveReconcile(reconcileDuration, r.Clock.Since(start), err) }()

	ctx, js, ok, err := addon.ReconcileJobSet(ctx, r.Client, req.NamespacedName)
	if err != nil {
		return ctrl.Result{}, err
	}
	if !ok || !sequence.Sequences(js) {
		if js != nil {
			r.warned.Forget(js.UID)
		}
		r.forgetWritten(req.NamespacedName)
		return ctrl.Result{}, nil
	}
	log := ctrl.LoggerFrom(ctx)
	stages, errs := sequence.Stages(js)
	if len(errs) > 0 {
		r.warn(js, ReasonInvalid, "invalid", "Nothing is released: %v", errs.ToAggregate())
		return ctrl.Result{}, nil
	}
	if len(sequence.GatedStages(stages)) == 0 {
		return ctrl.Result{}, nil
	}
	if !sequence.Admitted(js, stages) {
		r.warn(js, ReasonNotAdmitted, "not-admitted",
			"The JobSet was created while the sequencer webhook was not running: its pods carry no scheduling gate and are not held back; re-create the JobSet")
		return ctrl.Result{}, nil
	}
	if ptr.Deref(js.Spec.Suspend, false) {
		log.V(2).Info("Releasing nothing while the JobSet is suspended")
		return ctrl.Result{}, r.withdraw(ctx, js)
	}

	var jobs batchv1.JobList
	if err := r.Client.List(ctx, &jobs, client.InNamespace(js.Namespace), client.MatchingFields{JobSetNameIndex: js.Name}); err != nil {
		reconcileErrors.WithLabelValues("list").Inc()
		return ctrl.Result{}, fmt.Errorf("listing Jobs: %w", err)
	}
	jobs.Items = jobsets.OwnedJobs(js, jobs.Items)
	attempt := jobsets.CurrentAttempt(js, jobs.Items)
	prev, hadPrev := r.previous(js)
	d := decide(js, stages, prev, tally(jobs.Items, attempt), attempt)
	log.V(2).Info("Reconciling", "attempt", attempt, "released", d.released.ReplicatedJobs, "newly", len(d.newly))

	// The pods first, straight from the Jobs' state: the hand-off waits for neither the
	// annotation (and the JobSet webhooks it goes through) nor the JobSet's status. A crash
	// in between loses nothing: the next reconcile derives the same releases from the Jobs.
	podErr := r.releasePods(ctx, js, sets.New(d.released.ReplicatedJobs...), attempt)
	var annErr error
	if value := d.released.String(); js.Annotations[contract.ReleasedAnnotationKey] != value && !r.wrote(js, value) {
		if hadPrev || len(d.released.ReplicatedJobs) > 0 {
			annErr = r.patchReleased(ctx, js, value)
			if annErr == nil {
				r.remember(js, d.released)
			}
		}
	}
	if annErr == nil {
		for _, s := range d.newly {
			if podErr == nil {
				observeHandoff(s, doneAt(jobs.Items, attempt, s.DependsOn, start), r.Clock.Now())
			}
			status := strictest(s.DependsOn)
			for _, name := range s.ReplicatedJobs {
				replicatedJobsReleased.WithLabelValues(string(status)).Inc()
				log.Info("Released a ReplicatedJob", "replicatedJob", name, "stage", s.Index, "attempt", attempt, "waitedFor", describe(s.DependsOn))
				addon.Tell(r.Recorder, js, firstJob(jobs.Items, name), corev1.EventTypeNormal, ReasonStageReleased, actionRelease,
					"Released ReplicatedJob %s (stage %d, restart attempt %d): %s", name, s.Index, attempt, describe(s.DependsOn))
			}
		}
	}
	if err := errors.Join(podErr, annErr); err != nil {
		addon.Tell(r.Recorder, js, nil, corev1.EventTypeWarning, ReasonReleaseFailed, actionRelease, "Releasing failed: %v", err)
		return ctrl.Result{}, err
	}
	return ctrl.Result{}, nil
}

// withdraw takes back the releases of a suspended JobSet: suspending it (Kueue evicting or
// preempting it) deletes its pods, and its Jobs make new ones, gated again, when it resumes.
// Those must wait for their predecessors to hold again: a Ready predecessor's pods are gone with
// the suspension. So the released annotation is emptied (same attempt), and after the resume
// each stage is released again, and told again, once its predecessors hold; a Complete
// predecessor stays Complete, so its successors are released again at once. podgroups, which
// reads the annotation, deletes the withdrawn stages' PodGroups and makes them again then.
func (r *Reconciler) withdraw(ctx context.Context, js *jobsetv1alpha2.JobSet) error {
	prev, _ := r.previous(js)
	if len(prev.ReplicatedJobs) == 0 {
		return nil
	}
	none := contract.Released{RestartAttempt: prev.RestartAttempt, ReplicatedJobs: []string{}}
	if err := r.patchReleased(ctx, js, none.String()); err != nil {
		return err
	}
	r.remember(js, none)
	ctrl.LoggerFrom(ctx).Info("Withdrew the releases of the suspended JobSet", "replicatedJobs", prev.ReplicatedJobs, "attempt", prev.RestartAttempt)
	addon.Tell(r.Recorder, js, nil, corev1.EventTypeNormal, ReasonReleasesWithdrawn, actionWithdraw,
		"The JobSet is suspended: ReplicatedJobs %s are held again (restart attempt %d); each is released again once its predecessors hold after the JobSet resumes",
		strings.Join(prev.ReplicatedJobs, ", "), prev.RestartAttempt)
	return nil
}

// previous is what is released in the JobSet: its released annotation, with what this process
// wrote last if the cache does not show it yet, and whether it has any.
func (r *Reconciler) previous(js *jobsetv1alpha2.JobSet) (contract.Released, bool) {
	prev, ok := contract.Released{RestartAttempt: -1}, false
	if value, found := js.Annotations[contract.ReleasedAnnotationKey]; found {
		ok = true
		parsed, errs := contract.ParseReleased(value, contract.JobSetAnnotationPath(contract.ReleasedAnnotationKey))
		if len(errs) == 0 { // written by hand otherwise: started again from the Jobs, and overwritten
			prev = parsed
		}
	}
	r.mu.Lock()
	w, wrote := r.written[client.ObjectKeyFromObject(js)]
	r.mu.Unlock()
	if wrote && w.uid == js.UID {
		switch {
		case w.released.RestartAttempt > prev.RestartAttempt:
			prev, ok = w.released, true
		case w.released.RestartAttempt == prev.RestartAttempt:
			prev, ok = prev.With(w.released.ReplicatedJobs...), true
		}
	}
	return prev, ok
}

func (r *Reconciler) remember(js *jobsetv1alpha2.JobSet, released contract.Released) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.written == nil {
		r.written = map[types.NamespacedName]writtenReleased{}
	}
	r.written[client.ObjectKeyFromObject(js)] = writtenReleased{uid: js.UID, released: released}
}

// wrote tells whether this process last wrote value as the JobSet's released annotation.
func (r *Reconciler) wrote(js *jobsetv1alpha2.JobSet, value string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	w, ok := r.written[client.ObjectKeyFromObject(js)]
	return ok && w.uid == js.UID && w.released.String() == value
}

func (r *Reconciler) forgetWritten(key types.NamespacedName) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.written, key)
}

// patchReleased writes the released annotation, and only it.
func (r *Reconciler) patchReleased(ctx context.Context, js *jobsetv1alpha2.JobSet, value string) error {
	patch := client.RawPatch(types.MergePatchType, fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q}}}`, contract.ReleasedAnnotationKey, value))
	if err := r.Client.Patch(ctx, js.DeepCopy(), patch); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		reconcileErrors.WithLabelValues("patch-jobset").Inc()
		return fmt.Errorf("recording the released ReplicatedJobs: %w", err)
	}
	return nil
}

// gateRemoval removes the sequencer's gate, and only it, from a pod (strategic merge patch on
// spec.schedulingGates, whose merge key is name), and in the same patch its gated label: the
// controller caches only the pods with that label, and a released pod, which it never needs
// again, leaves its cache (make bench ADDON=scale: the finished pods of 250 sequenced JobSets,
// still labelled, were the largest part of its memory).
var gateRemoval = client.RawPatch(contract.SequencerReleasePatchType, contract.SequencerReleasePatch)

// releasePods removes the gate from the gated pods of the released ReplicatedJobs of the
// attempt, r.Workers at a time.
func (r *Reconciler) releasePods(ctx context.Context, js *jobsetv1alpha2.JobSet, released sets.Set[string], attempt int32) error {
	if released.Len() == 0 {
		return nil
	}
	var pods corev1.PodList
	if err := r.Client.List(ctx, &pods, client.InNamespace(js.Namespace), client.MatchingFields{JobSetNameIndex: js.Name}); err != nil {
		reconcileErrors.WithLabelValues("list").Inc()
		return fmt.Errorf("listing pods: %w", err)
	}
	var todo []*corev1.Pod
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.DeletionTimestamp == nil && sequence.HasGate(p.Spec.SchedulingGates) &&
			released.Has(p.Labels[contract.ReplicatedJobNameLabelKey]) && jobsets.AttemptOf(p.Labels) == attempt &&
			!r.releasedTracker().Pending(p) {
			todo = append(todo, p)
		}
	}
	if len(todo) == 0 {
		return nil
	}
	err := patchPods(ctx, r.Client, r.Workers, todo, gateRemoval, r.releasedTracker(), reconcileErrors.WithLabelValues("patch-pod"), podsReleased)
	ctrl.LoggerFrom(ctx).V(2).Info("Released pods", "count", len(todo))
	return err
}

// releasedTracker is r.released, made on first use.
func (r *Reconciler) releasedTracker() *addon.Changed {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.released == nil {
		r.released = &addon.Changed{TTL: addon.MadeTTL, Clock: r.Clock}
	}
	return r.released
}

// warn emits a Warning once per JobSet and reason (addon.Told), and counts it.
func (r *Reconciler) warn(js *jobsetv1alpha2.JobSet, reason, metricReason, format string, args ...any) {
	if r.warned.Warn(r.Recorder, js, nil, reason, actionSkip, format, args...) {
		reconcileErrors.WithLabelValues(metricReason).Inc()
	}
}

// firstJob is a Job of ReplicatedJob name (nil when none is there yet), the related object of
// its StageReleased Event: the events API folds Events of one regarding object, related object,
// reason and action into a series that keeps the first note, so without it the release of a
// second ReplicatedJob would be shown as the first's.
func firstJob(jobs []batchv1.Job, name string) runtime.Object {
	var first *batchv1.Job
	for i := range jobs {
		if j := &jobs[i]; j.Labels[contract.ReplicatedJobNameLabelKey] == name && (first == nil || j.Name < first.Name) {
			first = j
		}
	}
	if first == nil {
		return nil // not a typed nil: the recorder takes a nil interface as "no related object"
	}
	return first
}
