package barrier

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/pkg/addon"
	"github.com/jobset-addons/jobset-addons/pkg/addon/checks/sequencer"
	"github.com/jobset-addons/jobset-addons/pkg/addon/jobsets"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// reconcileGroup does what one barrier needs, and says when to look again. How long the barrier
// waited counts on this process's clock, from when it first saw a pod of it waiting (r.seen),
// never from the nodes' clocks.
func (r *Reconciler) reconcileGroup(ctx context.Context, js *jobsetv1alpha2.JobSet, b sequencer.Barrier, g jobsets.BarrierGroup,
	pods []barrierPod, opened *contract.BarriersOpened, attempt int32, run string, now time.Time) (time.Duration, error) {
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
	all := make([]*corev1.Pod, 0, len(pods))
	down := map[string]string{}
	for _, p := range pods {
		all = append(all, p.pod)
		if p.nodeDown != "" {
			down[p.pod.Name] = p.nodeDown
		}
	}
	missing := jobsets.NotWaiting(all, down, g.Pods, 10)
	key := fmt.Sprintf("%d/%s/%s", attempt, run, g.Name)
	if waited >= b.Timeout {
		return 0, r.timeOut(ctx, js, b, g, waiting, attempt, key, missing)
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

// timeOut fails the waiting pods of a barrier that stayed closed past its timeout, with the
// missing pods' names, and tells it once.
func (r *Reconciler) timeOut(ctx context.Context, js *jobsetv1alpha2.JobSet, b sequencer.Barrier, g jobsets.BarrierGroup,
	waiting []barrierPod, attempt int32, key, missing string) error {
	reason := fmt.Sprintf("%stimed out after %v (restart attempt %d, barrier %s): %d of %d pods not at the barrier: %s",
		contract.StartBarrierFailedPrefix, b.Timeout, attempt, g.Name, int(g.Pods)-len(waiting), g.Pods, missing)
	if err := r.tell(ctx, waiting, reason); err != nil {
		return err
	}
	if r.said.Once(js.UID, "timedout/"+key) {
		barrierTimeouts.Inc()
		ctrl.LoggerFrom(ctx).Info("A start barrier timed out", "barrier", g.Name, "attempt", attempt, "waiting", len(waiting), "missing", missing)
		addon.Tell(r.Recorder, js, nil, corev1.EventTypeWarning, ReasonBarrierTimedOut, actionFail,
			"Start barrier %s (restart attempt %d) timed out after %v: %d waiting pods failed; %d of %d pods not at the barrier: %s",
			g.Name, attempt, b.Timeout, len(waiting), int(g.Pods)-len(waiting), g.Pods, missing)
	}
	return nil
}

// open opens the barrier: it records the opening on the JobSet, then tells every pod. The
// record first: a crash after it loses nothing (the next reconcile tells the rest), where a crash
// after telling some pods would leave them out of the count.
func (r *Reconciler) open(ctx context.Context, js *jobsetv1alpha2.JobSet, g jobsets.BarrierGroup, pods []barrierPod,
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
