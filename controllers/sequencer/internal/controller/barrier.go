package controller

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
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

	"github.com/jobset-addons/jobset-addons/controllers/sequencer/internal/sequence"
	"github.com/jobset-addons/jobset-addons/pkg/addon"
	"github.com/jobset-addons/jobset-addons/pkg/addon/jobsets"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// BarrierReconciler opens the start barriers of JobSets (contract.StartBarrierAnnotationKey):
// once every pod of a barrier is bound and waits in its barrier init container, it writes
// "open" into each pod's barrier-state annotation, which the kubelet hands the container through
// a downwardAPI volume. It records each opened barrier on the JobSet first, so that a restart
// of the controller, and a pod that comes later (a scale-up, a re-created pod), find it open.
// A barrier that stays closed past its timeout fails its waiting pods with the missing pods'
// names.
type BarrierReconciler struct {
	// Client reads JobSets from the cache, and patches JobSets and pods.
	Client client.Client
	// Pods reads the barrier pods (BarrierPodCache).
	Pods     client.Reader
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

// BarrierPodCache is a cache of the pods of JobSets with a start barrier only (the webhook's
// scope label), each trimmed to what the reconciler reads: its labels, its controller reference,
// its barrier-state annotation, its node, whether it has the barrier container, its phase, the
// state of its init containers up to the barrier (waiting reasons and messages cut short: what
// keeps a pod from the barrier) and whether it is unschedulable. It is a cache of its own: the manager's caches only gated pods, and
// one informer may have one label selector.
func BarrierPodCache(mgr ctrl.Manager) (cache.Cache, error) {
	by := addon.Trimmed(cache.ByObject{Label: labels.SelectorFromSet(labels.Set{contract.StartBarrierLabelKey: contract.EnabledValue})}, trimBarrierPod)
	c, err := cache.New(mgr.GetConfig(), cache.Options{
		HTTPClient: mgr.GetHTTPClient(), Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper(),
		ByObject: map[client.Object]cache.ByObject{&corev1.Pod{}: by},
	})
	if err != nil {
		return nil, fmt.Errorf("making the barrier pods' cache: %w", err)
	}
	if err := c.IndexField(context.Background(), &corev1.Pod{}, JobSetNameIndex, ByJobSet); err != nil {
		return nil, fmt.Errorf("indexing barrier pods: %w", err)
	}
	return c, mgr.Add(managedCache{c})
}

// managedCache makes the manager start a cache with its own (before leader election, and wait
// for it to sync).
type managedCache struct{ cache.Cache }

func (c managedCache) GetCache() cache.Cache { return c.Cache }

func trimBarrierPod(obj any) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	state, hasState := p.Annotations[contract.StartBarrierStateAnnotationKey]
	p.Annotations = nil
	if hasState {
		p.Annotations = map[string]string{contract.StartBarrierStateAnnotationKey: state}
	}
	p.ManagedFields = nil
	if ref := metav1.GetControllerOfNoCopy(p); ref != nil {
		p.OwnerReferences = []metav1.OwnerReference{*ref}
	} else {
		p.OwnerReferences = nil
	}
	spec := corev1.PodSpec{NodeName: p.Spec.NodeName}
	if sequence.HasBarrier(&p.Spec) {
		spec.InitContainers = []corev1.Container{{Name: contract.StartBarrierContainerName}}
	}
	status := corev1.PodStatus{Phase: p.Status.Phase, InitContainerStatuses: trimInitStatuses(p.Status.InitContainerStatuses)}
	if c := unschedulable(p); c != nil {
		status.Conditions = []corev1.PodCondition{{Type: c.Type, Status: c.Status, Reason: c.Reason, Message: cut(c.Message, maxCachedMessage)}}
	}
	p.Spec, p.Status = spec, status
}

// SetupWithManager registers the reconciler for JobSets with a start barrier and their pods.
func (r *BarrierReconciler) SetupWithManager(mgr ctrl.Manager, pods cache.Cache, concurrency int) error {
	if err := addon.ForgetGone(mgr, addon.DefaultForgetEvery, &r.said, &jobsetv1alpha2.JobSetList{}); err != nil {
		return err
	}
	uses := predicate.NewPredicateFuncs(func(o client.Object) bool {
		js, ok := o.(*jobsetv1alpha2.JobSet)
		return ok && sequence.UsesBarrier(js)
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named("start-barrier").
		WatchesRawSource(addon.For(mgr, &jobsetv1alpha2.JobSet{}, uses)).
		WatchesRawSource(source.Kind(pods, client.Object(&corev1.Pod{}), handler.EnqueueRequestsFromMapFunc(jobsets.JobSetOf))).
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
}

// Reconcile opens, tells about, or times out each barrier of the JobSet's current attempt.
func (r *BarrierReconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, err error) {
	start := r.Clock.Now()
	defer func() { addon.ObserveReconcile(barrierReconcileDuration, r.Clock.Since(start), err) }()

	ctx, js, ok, err := addon.ReconcileJobSet(ctx, r.Client, req.NamespacedName)
	if err != nil {
		return ctrl.Result{}, err
	}
	if !ok || !sequence.UsesBarrier(js) {
		if js != nil {
			r.said.Forget(js.UID)
		}
		r.forgetWritten(req.NamespacedName)
		r.seen.forget(req.NamespacedName)
		return ctrl.Result{}, nil
	}
	b, stages, usable := r.readBarrier(js)
	if !usable {
		return ctrl.Result{}, nil
	}
	opened, hadOpened := r.previousOpened(js)
	run, running := jobsets.BarrierRun(js)
	if !running {
		// Suspending deletes the pods: those made on resume wait for each other again.
		r.seen.forget(req.NamespacedName)
		if hadOpened && len(opened.Groups) > 0 {
			return ctrl.Result{}, r.patchOpened(ctx, js, contract.BarriersOpened{RestartAttempt: opened.RestartAttempt, Run: opened.Run})
		}
		return ctrl.Result{}, nil
	}
	attempt, members, err := r.members(ctx, js, stages)
	if err != nil {
		return ctrl.Result{}, err
	}
	if !opened.For(attempt, run) {
		// Another attempt's, or another run's: a suspend and resume this process did not see.
		opened = contract.BarriersOpened{RestartAttempt: attempt, Run: &run}
	}
	now := r.Clock.Now()
	var requeue time.Duration
	var errList []error
	for _, m := range members {
		after, err := r.reconcileGroup(ctx, js, b, m.group, m.pods, &opened, attempt, run, now)
		again, nudgeErr := r.nudge(ctx, m.pods, now)
		errList = append(errList, err, nudgeErr)
		for _, d := range []time.Duration{after, again} {
			if d > 0 && (requeue == 0 || d < requeue) {
				requeue = d
			}
		}
	}
	if err := errors.Join(errList...); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{RequeueAfter: requeue}, nil
}

// readBarrier reads the JobSet's barrier and stages, and whether the barrier can be acted on:
// it parses, and the webhook put the barrier in every pod template (else it warns, once).
func (r *BarrierReconciler) readBarrier(js *jobsetv1alpha2.JobSet) (sequence.Barrier, []contract.Stage, bool) {
	b, _, errs := sequence.ReadBarrier(js)
	var stages []contract.Stage
	if len(errs) == 0 {
		stages, errs = sequence.Stages(js)
	}
	if len(errs) > 0 {
		r.said.Warn(r.Recorder, js, nil, ReasonInvalid, actionSkip, "No start barrier is opened: %v", errs.ToAggregate())
		return b, nil, false
	}
	for i := range js.Spec.ReplicatedJobs {
		if !sequence.HasBarrier(&js.Spec.ReplicatedJobs[i].Template.Spec.Template.Spec) {
			r.said.Warn(r.Recorder, js, nil, ReasonNotAdmitted, actionSkip,
				"The JobSet was created while the sequencer webhook was not running: its pods have no start barrier; re-create the JobSet")
			return b, nil, false
		}
	}
	return b, stages, true
}

// groupPods is a barrier and its pods.
type groupPods struct {
	group jobsets.BarrierGroup
	pods  []barrierPod
}

// members are the JobSet's barriers with the pods of each in the current attempt. A pod counts
// only through its Job (jobsets.Members): its controller a Job that the JobSet's controller made;
// its ReplicatedJob and attempt are the Job's. The attempt is the JobSet's status.restarts, or a
// later one of those Jobs. A pod that anyone else made, whatever its labels, counts for nothing.
func (r *BarrierReconciler) members(ctx context.Context, js *jobsetv1alpha2.JobSet, stages []contract.Stage) (int32, []groupPods, error) {
	var jobs batchv1.JobList
	if err := r.Client.List(ctx, &jobs, client.InNamespace(js.Namespace), client.MatchingFields{JobSetNameIndex: js.Name}); err != nil {
		barrierErrors.WithLabelValues("list").Inc()
		return 0, nil, fmt.Errorf("listing Jobs: %w", err)
	}
	var list corev1.PodList
	if err := r.Pods.List(ctx, &list, client.InNamespace(js.Namespace), client.MatchingFields{JobSetNameIndex: js.Name}); err != nil {
		barrierErrors.WithLabelValues("list").Inc()
		return 0, nil, fmt.Errorf("listing pods: %w", err)
	}
	of := jobsets.MembersOf(js, jobs.Items)
	attempt := of.Attempt(js)
	groups := sequence.BarrierGroups(js, stages)
	groupOf := map[string]int{}
	out := make([]groupPods, len(groups))
	for gi, g := range groups {
		out[gi].group = g
		for _, name := range g.ReplicatedJobs {
			groupOf[name] = gi
		}
	}
	for i := range list.Items {
		p := &list.Items[i]
		rj, a, member := of.PodOf(p)
		gi, known := groupOf[rj]
		if !member || !known || a != attempt || p.DeletionTimestamp != nil || jobsets.PodFinished(p) || !sequence.HasBarrier(&p.Spec) {
			continue
		}
		_, waiting := jobsets.AtBarrier(p)
		out[gi].pods = append(out[gi].pods, barrierPod{pod: p, waiting: waiting})
	}
	return attempt, out, nil
}

// reconcileGroup does what one barrier needs, and says when to look again. How long the barrier
// waited counts on this process's clock, from when it first saw a pod of it waiting (r.seen),
// never from the nodes' clocks.
func (r *BarrierReconciler) reconcileGroup(ctx context.Context, js *jobsetv1alpha2.JobSet, b sequence.Barrier, g jobsets.BarrierGroup,
	pods []barrierPod, opened *contract.BarriersOpened, attempt int32, run string, now time.Time) (time.Duration, error) {
	log := ctrl.LoggerFrom(ctx).WithValues("barrier", g.Name, "attempt", attempt)
	groupKey := fmt.Sprintf("%s/%d/%s/%s", js.UID, attempt, run, g.Name)
	if opened.Has(g.Name) { // a pod that came after the opening, or one not told yet
		r.seen.drop(client.ObjectKeyFromObject(js), groupKey)
		return 0, r.tell(ctx, pods, openState)
	}
	blockedAfter := r.blocked(ctx, js, g, pods, attempt, now)
	var waiting []barrierPod
	for _, p := range pods {
		if p.waiting {
			waiting = append(waiting, p)
		}
	}
	if len(waiting) == 0 {
		return blockedAfter, nil
	}
	first := r.seen.since(client.ObjectKeyFromObject(js), groupKey, now)
	waited := now.Sub(first)
	if int32(len(waiting)) >= g.Pods {
		r.seen.drop(client.ObjectKeyFromObject(js), groupKey)
		return 0, r.open(ctx, js, g, pods, opened, len(waiting), waited, attempt)
	}
	all := make([]*corev1.Pod, len(pods))
	for i := range pods {
		all[i] = pods[i].pod
	}
	missing := jobsets.NotAtBarrier(all, g.Pods, 10)
	key := fmt.Sprintf("%d/%s/%s", attempt, run, g.Name)
	if waited >= b.Timeout {
		reason := fmt.Sprintf("%stimed out after %v (restart attempt %d, barrier %s): %d of %d pods not at the barrier: %s",
			contract.StartBarrierFailedPrefix, b.Timeout, attempt, g.Name, int(g.Pods)-len(waiting), g.Pods, missing)
		if err := r.tell(ctx, waiting, reason); err != nil {
			return 0, err
		}
		if r.said.Once(js.UID, "timedout/"+key) {
			barrierTimeouts.Inc()
			log.Info("A start barrier timed out", "waiting", len(waiting), "missing", missing)
			addon.Tell(r.Recorder, js, nil, corev1.EventTypeWarning, ReasonBarrierTimedOut, actionFail,
				"Start barrier %s (restart attempt %d) timed out after %v: %d waiting pods failed; %d of %d pods not at the barrier: %s",
				g.Name, attempt, b.Timeout, len(waiting), int(g.Pods)-len(waiting), g.Pods, missing)
		}
		return 0, nil
	}
	next := soonest(blockedAfter, b.Timeout-waited)
	warnAfter := WarnAfter(b.Timeout)
	if waited < warnAfter {
		return soonest(next, warnAfter-waited), nil
	}
	if r.said.Once(js.UID, "waiting/"+key) {
		addon.Tell(r.Recorder, js, nil, corev1.EventTypeWarning, ReasonBarrierWaiting, actionWait,
			"Start barrier %s (restart attempt %d): %d of %d pods wait, the first for %v; not there yet: %s",
			g.Name, attempt, len(waiting), g.Pods, waited.Round(time.Second), missing)
	}
	return next, nil
}

// open opens the barrier: it records the opening on the JobSet, then tells every pod. The
// record first: a crash after it loses nothing (the next reconcile tells the rest), where a crash
// after telling some pods would leave them out of the count.
func (r *BarrierReconciler) open(ctx context.Context, js *jobsetv1alpha2.JobSet, g jobsets.BarrierGroup, pods []barrierPod,
	opened *contract.BarriersOpened, waiting int, waited time.Duration, attempt int32) error {
	next := opened.With(g.Name)
	if err := r.patchOpened(ctx, js, next); err != nil {
		return err
	}
	*opened = next
	if err := r.tell(ctx, pods, openState); err != nil {
		return err
	}
	barrierWait.Observe(waited.Seconds())
	barriersOpened.Inc()
	ctrl.LoggerFrom(ctx).Info("Opened a start barrier", "barrier", g.Name, "attempt", attempt, "pods", waiting, "firstWaited", waited)
	addon.Tell(r.Recorder, js, nil, corev1.EventTypeNormal, ReasonBarrierOpened, actionOpen,
		"Opened start barrier %s (restart attempt %d): %d pods, the first waited %v", g.Name, attempt, waiting, waited.Round(time.Second))
	return nil
}

// soonest is the shorter of two positive durations (0: none).
func soonest(a, b time.Duration) time.Duration {
	if a <= 0 || (b > 0 && b < a) {
		return b
	}
	return a
}

// WarnAfter is how long a barrier's first pod waits before the StartBarrierWaiting Event: half
// the timeout, at most a minute.
func WarnAfter(timeout time.Duration) time.Duration { return min(timeout/2, time.Minute) }

const openState = contract.StartBarrierOpen
