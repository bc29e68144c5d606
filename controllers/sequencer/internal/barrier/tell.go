package barrier

import (
	"context"
	"fmt"
	"maps"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/controllers/sequencer/internal/jobsetpods"
	"github.com/jobset-addons/jobset-addons/pkg/addon"
	"github.com/jobset-addons/jobset-addons/pkg/addon/jobsets"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

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
func (r *Reconciler) nudge(ctx context.Context, pods []barrierPod, now time.Time) (time.Duration, error) {
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
	return next, jobsetpods.Patch(ctx, r.Client, r.Workers, todo, patch, r.tracker(), barrierErrors.WithLabelValues("patch-pod"), barrierPodsNudged)
}

// tell writes state into the barrier-state annotation of every pod that does not hold it yet,
// r.Workers at a time: one merge patch per pod, the least the kubelet can learn it from.
func (r *Reconciler) tell(ctx context.Context, pods []barrierPod, state string) error {
	patch := client.RawPatch(types.MergePatchType, fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q}}}`, contract.StartBarrierStateAnnotationKey, state))
	var todo []*corev1.Pod
	for _, p := range pods {
		if p.pod.Annotations[contract.StartBarrierStateAnnotationKey] != state && !r.tracker().Pending(p.pod) {
			todo = append(todo, p.pod)
		}
	}
	err := jobsetpods.Patch(ctx, r.Client, r.Workers, todo, patch, r.tracker(), barrierErrors.WithLabelValues("patch-pod"), barrierPodsTold)
	if len(todo) > 0 {
		ctrl.LoggerFrom(ctx).V(2).Info("Told barrier pods", "count", len(todo), "state", state)
	}
	return err
}

// previousOpened is the JobSet's opened annotation, or what this process wrote last if the cache
// does not show it yet, and whether it has any.
func (r *Reconciler) previousOpened(js *jobsetv1alpha2.JobSet) (contract.BarriersOpened, bool) {
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
func (r *Reconciler) patchOpened(ctx context.Context, js *jobsetv1alpha2.JobSet, opened contract.BarriersOpened) error {
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

func (r *Reconciler) forgetWritten(key types.NamespacedName) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.written, key)
}

// tracker is r.told, made on first use.
func (r *Reconciler) tracker() *addon.Changed {
	return jobsetpods.Tracker(&r.mu, &r.told, r.Clock)
}
