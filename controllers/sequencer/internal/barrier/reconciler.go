// Package barrier is the sequencer's start-barrier reconciler: once every pod of a barrier
// waits in its barrier init container, it opens the barrier by writing each pod's barrier-state
// annotation, and it fails the waiting pods of a barrier that stays closed past its timeout.
package barrier

import (
	"context"
	"errors"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/source"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/pkg/addon"
	"github.com/jobset-addons/jobset-addons/pkg/addon/checks/sequencer"
	"github.com/jobset-addons/jobset-addons/pkg/addon/jobsets"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// Reconciler opens the start barriers of JobSets (contract.StartBarrierAnnotationKey):
// once every pod of a barrier is bound and waits in its barrier init container, it writes
// "open" into each pod's barrier-state annotation, which the kubelet hands the container through
// a downwardAPI volume. It records each opened barrier on the JobSet first, so that a restart
// of the controller, and a pod that comes later (a scale-up, a re-created pod), find it open.
// A barrier that stays closed past its timeout fails its waiting pods with the missing pods'
// names.
type Reconciler struct {
	// Client reads JobSets from the cache, and patches JobSets and pods.
	Client client.Client
	// Pods reads the barrier pods (PodCache).
	Pods client.Reader
	// Nodes reads the nodes the pods are bound to (a cache of them, addon.TrimNode); nil: every
	// node is trusted.
	Nodes    client.Reader
	Recorder events.EventRecorder
	Clock    clock.Clock
	// Workers is how many pods one reconcile patches at once.
	Workers int

	mu sync.Mutex
	// told pods (open or failed) that the cache does not show so yet.
	told *addon.Changed
	// said holds the Events told once per JobSet (waiting, timed out, opened, warnings).
	said addon.Told
	// written holds, per JobSet, the opened annotation this process last wrote.
	written map[types.NamespacedName]writtenOpened
	// toldAt holds, per pod told (open or failed) whose barrier container still ran when last
	// looked at, when this process last told it, and how many times it nudged it (nudge).
	toldAt map[types.UID]toldPod
	// pruned is when toldAt last lost its old entries (pods that finished or went away).
	pruned time.Time
	// seen holds, on this process's clock, when it first saw each closed barrier with a pod
	// waiting, and each barrier pod unschedulable.
	seen firstSeen
}

type toldPod struct {
	at     time.Time
	nudges int
}

type writtenOpened struct {
	uid    types.UID
	opened contract.BarriersOpened
}

// SetupWithManager registers the reconciler for JobSets with a start barrier and their pods.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, pods cache.Cache, concurrency int) error {
	if err := addon.ForgetGone(mgr, addon.DefaultForgetEvery, &r.said, &jobsetv1alpha2.JobSetList{}); err != nil {
		return err
	}
	uses := predicate.NewPredicateFuncs(func(o client.Object) bool {
		js, ok := o.(*jobsetv1alpha2.JobSet)
		return ok && sequencer.UsesBarrier(js)
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named("start-barrier").
		WatchesRawSource(addon.For(mgr, &jobsetv1alpha2.JobSet{}, uses)).
		WatchesRawSource(source.Kind(pods, client.Object(&corev1.Pod{}), handler.EnqueueRequestsFromMapFunc(jobsets.JobSetOf))).
		// A node that stops answering, or is deleted: its pods no longer count as waiting.
		WatchesRawSource(addon.Watches(mgr, &corev1.Node{}, handler.EnqueueRequestsFromMapFunc(r.podsOnNode), addon.NodeHealthChanges(false))).
		// A pod counts only once its Job is known: a Job seen after its pods looks again.
		WatchesRawSource(addon.Watches(mgr, &batchv1.Job{}, handler.EnqueueRequestsFromMapFunc(jobsets.JobSetOf), predicate.Funcs{
			UpdateFunc: func(event.UpdateEvent) bool { return false }, DeleteFunc: func(event.DeleteEvent) bool { return false },
		})).
		WithOptions(controller.Options{MaxConcurrentReconciles: concurrency}).
		Complete(addon.Busy(r))
}

// barrierPod is a pod of the current attempt in its barrier.
type barrierPod struct {
	pod     *corev1.Pod
	waiting bool
	// nodeDown says why the pod's node is not trusted (deleted, not Ready), "" when it is.
	nodeDown string
}

// Reconcile opens, tells about, or times out each barrier of the JobSet's current attempt: read
// the barrier, forget the openings of a suspended JobSet, find each barrier's member pods, then
// do what each barrier needs.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, err error) {
	start := r.Clock.Now()
	defer func() { addon.ObserveReconcile(barrierReconcileDuration, r.Clock.Since(start), err) }()

	ctx, js, ok, err := addon.ReconcileJobSet(ctx, r.Client, req.NamespacedName)
	if err != nil {
		return ctrl.Result{}, err
	}
	if !ok || !sequencer.UsesBarrier(js) {
		r.forget(req.NamespacedName, js)
		return ctrl.Result{}, nil
	}
	b, stages, usable := r.readBarrier(js)
	if !usable {
		return ctrl.Result{}, nil
	}
	opened, hadOpened := r.previousOpened(js)
	run, running := jobsets.BarrierRun(js)
	if !running {
		return ctrl.Result{}, r.suspended(ctx, js, opened, hadOpened)
	}
	attempt, members, err := r.members(ctx, js, stages)
	if err != nil {
		return ctrl.Result{}, err
	}
	if !opened.For(attempt, run) {
		// Another attempt's, or another run's: a suspend and resume this process did not see.
		opened = contract.BarriersOpened{RestartAttempt: attempt, Run: &run}
	}
	requeue, err := r.reconcileGroups(ctx, js, b, members, &opened, attempt, run)
	if err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{RequeueAfter: requeue}, nil
}

// forget drops what this process keeps about a JobSet that is gone or has no barrier.
func (r *Reconciler) forget(key types.NamespacedName, js *jobsetv1alpha2.JobSet) {
	if js != nil {
		r.said.Forget(js.UID)
	}
	r.forgetWritten(key)
	r.seen.forget(key)
}

// suspended forgets a suspended JobSet's openings: suspending deletes the pods, and those made
// on resume wait for each other again.
func (r *Reconciler) suspended(ctx context.Context, js *jobsetv1alpha2.JobSet, opened contract.BarriersOpened, hadOpened bool) error {
	r.seen.forget(client.ObjectKeyFromObject(js))
	if hadOpened && len(opened.Groups) > 0 {
		return r.patchOpened(ctx, js, contract.BarriersOpened{RestartAttempt: opened.RestartAttempt, Run: opened.Run})
	}
	return nil
}

// reconcileGroups does what each barrier needs (reconcileGroup), nudges its pods told but still
// waiting, and says when to look again: the soonest any barrier asks for.
func (r *Reconciler) reconcileGroups(ctx context.Context, js *jobsetv1alpha2.JobSet, b sequencer.Barrier, members []groupPods,
	opened *contract.BarriersOpened, attempt int32, run string) (time.Duration, error) {
	now := r.Clock.Now()
	var requeue time.Duration
	var errList []error
	for _, m := range members {
		after, err := r.reconcileGroup(ctx, js, b, m.group, m.pods, opened, attempt, run, now)
		again, nudgeErr := r.nudge(ctx, m.pods, now)
		errList = append(errList, err, nudgeErr)
		for _, d := range []time.Duration{after, again} {
			if d > 0 && (requeue == 0 || d < requeue) {
				requeue = d
			}
		}
	}
	return requeue, errors.Join(errList...)
}

// readBarrier reads the JobSet's barrier and stages, and whether the barrier can be acted on:
// it parses, and the webhook put the barrier in every pod template (else it warns, once).
func (r *Reconciler) readBarrier(js *jobsetv1alpha2.JobSet) (sequencer.Barrier, []contract.Stage, bool) {
	b, _, errs := sequencer.ReadBarrier(js)
	var stages []contract.Stage
	if len(errs) == 0 {
		stages, errs = sequencer.Stages(js)
	}
	if len(errs) > 0 {
		r.said.Warn(r.Recorder, js, nil, ReasonInvalid, actionSkip, "No start barrier is opened: %v", errs.ToAggregate())
		return b, nil, false
	}
	for i := range js.Spec.ReplicatedJobs {
		if !sequencer.HasBarrier(&js.Spec.ReplicatedJobs[i].Template.Spec.Template.Spec) {
			r.said.Warn(r.Recorder, js, nil, ReasonNotAdmitted, actionSkip,
				"The JobSet was created while the sequencer webhook was not running: its pods have no start barrier; re-create the JobSet")
			return b, nil, false
		}
	}
	return b, stages, true
}
