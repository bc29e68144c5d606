package controller

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
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
// scope label), each trimmed to what the reconciler reads: its labels, its barrier-state
// annotation, its node, whether it has the barrier container, its phase and the barrier
// container's status. It is a cache of its own: the manager's caches only gated pods, and
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
	spec := corev1.PodSpec{NodeName: p.Spec.NodeName}
	if sequence.HasBarrier(&p.Spec) {
		spec.InitContainers = []corev1.Container{{Name: contract.StartBarrierContainerName}}
	}
	status := corev1.PodStatus{Phase: p.Status.Phase}
	if s := jobsets.BarrierStatus(p); s != nil {
		status.InitContainerStatuses = []corev1.ContainerStatus{*s}
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
		WithOptions(controller.Options{MaxConcurrentReconciles: concurrency}).
		Complete(addon.Busy(r))
}

// barrierPod is a pod of the current attempt in its barrier.
type barrierPod struct {
	pod     *corev1.Pod
	since   time.Time
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
		return ctrl.Result{}, nil
	}
	b, _, errs := sequence.ReadBarrier(js)
	var stages []contract.Stage
	if len(errs) == 0 {
		stages, errs = sequence.Stages(js)
	}
	if len(errs) > 0 {
		r.said.Warn(r.Recorder, js, nil, ReasonInvalid, actionSkip, "No start barrier is opened: %v", errs.ToAggregate())
		return ctrl.Result{}, nil
	}
	for i := range js.Spec.ReplicatedJobs {
		if !sequence.HasBarrier(&js.Spec.ReplicatedJobs[i].Template.Spec.Template.Spec) {
			r.said.Warn(r.Recorder, js, nil, ReasonNotAdmitted, actionSkip,
				"The JobSet was created while the sequencer webhook was not running: its pods have no start barrier; re-create the JobSet")
			return ctrl.Result{}, nil
		}
	}
	opened, hadOpened := r.previousOpened(js)
	if ptr.Deref(js.Spec.Suspend, false) {
		// Suspending deletes the pods: those made on resume wait for each other again.
		if hadOpened && len(opened.Groups) > 0 {
			return ctrl.Result{}, r.patchOpened(ctx, js, contract.BarriersOpened{RestartAttempt: opened.RestartAttempt})
		}
		return ctrl.Result{}, nil
	}

	var list corev1.PodList
	if err := r.Pods.List(ctx, &list, client.InNamespace(js.Namespace), client.MatchingFields{JobSetNameIndex: js.Name}); err != nil {
		barrierErrors.WithLabelValues("list").Inc()
		return ctrl.Result{}, fmt.Errorf("listing pods: %w", err)
	}
	attempt := js.Status.Restarts
	for i := range list.Items {
		if p := &list.Items[i]; p.Labels[contract.JobSetUIDLabelKey] == string(js.UID) {
			attempt = max(attempt, jobsets.AttemptOf(p.Labels))
		}
	}
	if opened.RestartAttempt != attempt {
		opened = contract.BarriersOpened{RestartAttempt: attempt}
	}
	groups := sequence.BarrierGroups(js, b.Mode, stages)
	groupOf := map[string]int{}
	for gi, g := range groups {
		for _, name := range g.ReplicatedJobs {
			groupOf[name] = gi
		}
	}
	members := make([][]barrierPod, len(groups))
	for i := range list.Items {
		p := &list.Items[i]
		gi, known := groupOf[p.Labels[contract.ReplicatedJobNameLabelKey]]
		if !known || p.DeletionTimestamp != nil || p.Labels[contract.JobSetUIDLabelKey] != string(js.UID) ||
			jobsets.AttemptOf(p.Labels) != attempt || jobsets.PodFinished(p) || !sequence.HasBarrier(&p.Spec) {
			continue
		}
		since, waiting := jobsets.AtBarrier(p)
		members[gi] = append(members[gi], barrierPod{pod: p, since: since, waiting: waiting})
	}

	now := r.Clock.Now()
	var requeue time.Duration
	var errList []error
	for gi, g := range groups {
		after, err := r.reconcileGroup(ctx, js, b, g, members[gi], &opened, attempt, now)
		again, nudgeErr := r.nudge(ctx, members[gi], now)
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

// reconcileGroup does what one barrier needs, and says when to look again.
func (r *BarrierReconciler) reconcileGroup(ctx context.Context, js *jobsetv1alpha2.JobSet, b sequence.Barrier, g jobsets.BarrierGroup,
	pods []barrierPod, opened *contract.BarriersOpened, attempt int32, now time.Time) (time.Duration, error) {
	log := ctrl.LoggerFrom(ctx).WithValues("barrier", g.Name, "attempt", attempt)
	if opened.Has(g.Name) { // a pod that came after the opening, or one not told yet
		return 0, r.tell(ctx, pods, openState)
	}
	var waiting []barrierPod
	var first time.Time
	for _, p := range pods {
		if p.waiting {
			waiting = append(waiting, p)
			if first.IsZero() || p.since.Before(first) {
				first = p.since
			}
		}
	}
	if len(waiting) == 0 {
		return 0, nil
	}
	if int32(len(waiting)) >= g.Pods {
		// The record first: a crash after it loses nothing (the next reconcile tells the rest),
		// where a crash after telling some pods would leave them out of the count.
		next := opened.With(g.Name)
		if err := r.patchOpened(ctx, js, next); err != nil {
			return 0, err
		}
		*opened = next
		if err := r.tell(ctx, pods, openState); err != nil {
			return 0, err
		}
		waited := now.Sub(first)
		barrierWait.Observe(waited.Seconds())
		barriersOpened.Inc()
		log.Info("Opened a start barrier", "pods", len(waiting), "firstWaited", waited)
		addon.Tell(r.Recorder, js, nil, corev1.EventTypeNormal, ReasonBarrierOpened, actionOpen,
			"Opened start barrier %s (restart attempt %d): %d pods, the first waited %v", g.Name, attempt, len(waiting), waited.Round(time.Second))
		return 0, nil
	}
	waited := now.Sub(first)
	all := make([]*corev1.Pod, len(pods))
	for i := range pods {
		all[i] = pods[i].pod
	}
	missing := jobsets.NotAtBarrier(all, g.Pods, 10)
	key := fmt.Sprintf("%d/%s", attempt, g.Name)
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
	warnAfter := WarnAfter(b.Timeout)
	if waited < warnAfter {
		return warnAfter - waited, nil
	}
	if r.said.Once(js.UID, "waiting/"+key) {
		addon.Tell(r.Recorder, js, nil, corev1.EventTypeWarning, ReasonBarrierWaiting, actionWait,
			"Start barrier %s (restart attempt %d): %d of %d pods wait, the first for %v; not there yet: %s",
			g.Name, attempt, len(waiting), g.Pods, waited.Round(time.Second), missing)
	}
	return b.Timeout - waited, nil
}

// WarnAfter is how long a barrier's first pod waits before the StartBarrierWaiting Event: half
// the timeout, at most a minute.
func WarnAfter(timeout time.Duration) time.Duration { return min(timeout/2, time.Minute) }

const openState = contract.StartBarrierOpen

// NudgeAfter is how long a pod told (open or failed) may still wait at its barrier before it is
// told again; each further time waits twice as long, at most MaxNudgeAfter.
const (
	NudgeAfter    = 5 * time.Second
	MaxNudgeAfter = time.Minute
)

// nudge tells again each pod whose barrier-state was written (open or failed) and whose barrier
// container still runs NudgeAfter after it was told (then 2x, 4x, ... up to MaxNudgeAfter), and
// says when to look next. The annotation it writes, StartBarrierNudgeAnnotationKey (the time),
// changes nothing but the pod: the kubelet, told of an update, rewrites the pod's downwardAPI
// files, and a rewrite that it lost, or a barrier-state patch lost before it, is done again.
// A pod told by an earlier process is counted from the first time this one sees it.
func (r *BarrierReconciler) nudge(ctx context.Context, pods []barrierPod, now time.Time) (time.Duration, error) {
	var todo []*corev1.Pod
	var next time.Duration
	later := func(d time.Duration) {
		if next == 0 || d < next {
			next = d
		}
	}
	r.mu.Lock()
	if r.toldAt == nil {
		r.toldAt = map[types.UID]toldPod{}
	}
	if now.Sub(r.pruned) > 10*MaxNudgeAfter {
		// A pod seen again after its entry went is counted from then: one nudge later at most.
		maps.DeleteFunc(r.toldAt, func(_ types.UID, t toldPod) bool { return now.Sub(t.at) > 10*MaxNudgeAfter })
		r.pruned = now
	}
	for _, bp := range pods {
		p := bp.pod
		s := jobsets.BarrierStatus(p)
		if p.Annotations[contract.StartBarrierStateAnnotationKey] == "" || s == nil || s.State.Running == nil {
			delete(r.toldAt, p.UID)
			continue
		}
		told, ok := r.toldAt[p.UID]
		if !ok {
			told = toldPod{at: now}
			r.toldAt[p.UID] = told
		}
		wait := NudgeAfter << min(told.nudges, 4)
		if due := told.at.Add(min(wait, MaxNudgeAfter)); now.Before(due) {
			later(due.Sub(now))
			continue
		}
		todo = append(todo, p)
		r.toldAt[p.UID] = toldPod{at: now, nudges: told.nudges + 1}
		later(min(wait*2, MaxNudgeAfter))
	}
	r.mu.Unlock()
	if len(todo) == 0 {
		return next, nil
	}
	names := make([]string, len(todo))
	for i, p := range todo {
		names[i] = p.Name
	}
	ctrl.LoggerFrom(ctx).Info("Telling pods again that still wait at their start barrier", "pods", names)
	patch := client.RawPatch(types.MergePatchType, fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q}}}`,
		contract.StartBarrierNudgeAnnotationKey, now.UTC().Format(time.RFC3339Nano)))
	return next, patchPods(ctx, r.Client, r.Workers, todo, patch, r.tracker(), barrierErrors.WithLabelValues("patch-pod"), barrierPodsNudged)
}

// tell writes state into the barrier-state annotation of every pod that does not hold it yet,
// r.Workers at a time: one merge patch per pod, the least the kubelet can learn it from.
func (r *BarrierReconciler) tell(ctx context.Context, pods []barrierPod, state string) error {
	patch := client.RawPatch(types.MergePatchType, fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q}}}`, contract.StartBarrierStateAnnotationKey, state))
	var todo []*corev1.Pod
	for _, p := range pods {
		if p.pod.Annotations[contract.StartBarrierStateAnnotationKey] != state && !r.tracker().Pending(p.pod) {
			todo = append(todo, p.pod)
		}
	}
	err := patchPods(ctx, r.Client, r.Workers, todo, patch, r.tracker(), barrierErrors.WithLabelValues("patch-pod"), barrierPodsTold)
	if len(todo) > 0 {
		ctrl.LoggerFrom(ctx).V(2).Info("Told barrier pods", "count", len(todo), "state", state)
	}
	return err
}

// previousOpened is the JobSet's opened annotation, or what this process wrote last if the cache
// does not show it yet, and whether it has any.
func (r *BarrierReconciler) previousOpened(js *jobsetv1alpha2.JobSet) (contract.BarriersOpened, bool) {
	prev, ok := contract.BarriersOpened{RestartAttempt: -1}, false
	if value, found := js.Annotations[contract.StartBarrierOpenedAnnotationKey]; found {
		if parsed, errs := contract.ParseBarriersOpened(value, contract.JobSetAnnotationPath(contract.StartBarrierOpenedAnnotationKey)); len(errs) == 0 {
			prev, ok = parsed, true
		}
	}
	r.mu.Lock()
	w, wrote := r.written[client.ObjectKeyFromObject(js)]
	r.mu.Unlock()
	if wrote && w.uid == js.UID && (w.opened.RestartAttempt > prev.RestartAttempt ||
		(w.opened.RestartAttempt == prev.RestartAttempt && len(w.opened.Groups) > len(prev.Groups))) {
		prev, ok = w.opened, true
	}
	return prev, ok
}

// patchOpened writes the opened annotation, and only it.
func (r *BarrierReconciler) patchOpened(ctx context.Context, js *jobsetv1alpha2.JobSet, opened contract.BarriersOpened) error {
	patch := client.RawPatch(types.MergePatchType, fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q}}}`, contract.StartBarrierOpenedAnnotationKey, opened.String()))
	if err := r.Client.Patch(ctx, js.DeepCopy(), patch); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		barrierErrors.WithLabelValues("patch-jobset").Inc()
		return fmt.Errorf("recording the opened start barriers: %w", err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.written == nil {
		r.written = map[types.NamespacedName]writtenOpened{}
	}
	r.written[client.ObjectKeyFromObject(js)] = writtenOpened{uid: js.UID, opened: opened}
	return nil
}

func (r *BarrierReconciler) forgetWritten(key types.NamespacedName) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.written, key)
}

func (r *BarrierReconciler) tracker() *addon.Changed {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.told == nil {
		r.told = &addon.Changed{TTL: addon.MadeTTL, Clock: r.Clock}
	}
	return r.told
}

// patchPods applies patch to each pod, workers at a time, records each patched pod (as the cache
// showed it) in tracker, and counts each pod's result in failed or done and in the objects
// metric (a pod gone is no error).
func patchPods(ctx context.Context, c client.Client, workers int, pods []*corev1.Pod, patch client.Patch, tracker *addon.Changed, failed, done prometheus.Counter) error {
	var mu sync.Mutex
	var errs []error
	sem := make(chan struct{}, max(workers, 1))
	var wg sync.WaitGroup
	for _, p := range pods {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			before := metav1.ObjectMeta{UID: p.UID, ResourceVersion: p.ResourceVersion} // the patch answers into p
			err := c.Patch(ctx, p, patch)
			if apierrors.IsNotFound(err) {
				return
			}
			if err != nil {
				failed.Inc()
				addon.CountObject("Pod", addon.ActionFailed, 1)
				mu.Lock()
				errs = append(errs, fmt.Errorf("patching pod %s: %w", p.Name, err))
				mu.Unlock()
				return
			}
			done.Inc()
			addon.CountObject("Pod", addon.ActionUpdated, 1)
			tracker.Wrote(&before)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}
