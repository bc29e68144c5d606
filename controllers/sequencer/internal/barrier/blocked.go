package barrier

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/pkg/addon"
	"github.com/jobset-addons/jobset-addons/pkg/addon/jobsets"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// StuckReasons are the reasons a container waits for that do not pass by themselves: an init
// container (the barrier's too) waiting for one of them keeps its pod from the barrier until
// someone fixes the cause, so the barrier cannot open.
var StuckReasons = []string{"CreateContainerConfigError", "CreateContainerError", "ErrImagePull", "ImagePullBackOff",
	"InvalidImageName", "CrashLoopBackOff", "RunContainerError"}

// UnschedulableReason is the cause of a pod the scheduler found no node for (its PodScheduled
// condition's reason).
const UnschedulableReason = corev1.PodReasonUnschedulable

// UnschedulableAfter is how long this process sees a pod of a closed barrier unschedulable
// before it tells the barrier blocked (a cluster autoscaler may add a node meanwhile).
const UnschedulableAfter = 20 * time.Second

// NodeDownReason is the cause of a pod on a node that is deleted or not Ready (addon.HealthOf):
// its status is what its kubelet last wrote, and the pod may have stopped long ago.
const NodeDownReason = "NodeNotReady"

// maxCachedMessage bounds each waiting or condition message kept in the barrier pods' cache.
const maxCachedMessage = 256

// stuck is what keeps a pod from its barrier: an init container waiting for one of
// StuckReasons ("" and UnschedulableReason for a pod without a node).
type stuck struct {
	container, reason, message string
}

// stuckAt tells what keeps the pod from its barrier for good, if anything: the first init
// container up to the barrier's waiting for one of StuckReasons, else the pod unschedulable.
func stuckAt(p *corev1.Pod) (stuck, bool) {
	for _, s := range p.Status.InitContainerStatuses {
		if w := s.State.Waiting; w != nil && slices.Contains(StuckReasons, w.Reason) {
			return stuck{container: s.Name, reason: w.Reason, message: w.Message}, true
		}
		if s.Name == contract.StartBarrierContainerName {
			break
		}
	}
	if c := unschedulable(p); c != nil && p.Spec.NodeName == "" {
		return stuck{reason: UnschedulableReason, message: c.Message}, true
	}
	return stuck{}, false
}

// unschedulable is the pod's PodScheduled condition when it says Unschedulable, or nil.
func unschedulable(p *corev1.Pod) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		c := &p.Status.Conditions[i]
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == UnschedulableReason {
			return c
		}
	}
	return nil
}

// trimInitStatuses keeps, of the init containers' statuses, those up to the barrier's (what
// keeps a pod from it): name, running, and waiting with its reason and a short message.
func trimInitStatuses(in []corev1.ContainerStatus) []corev1.ContainerStatus {
	var out []corev1.ContainerStatus
	for _, s := range in {
		t := corev1.ContainerStatus{Name: s.Name, State: corev1.ContainerState{Running: s.State.Running}}
		if w := s.State.Waiting; w != nil {
			t.State.Waiting = &corev1.ContainerStateWaiting{Reason: w.Reason, Message: cut(w.Message, maxCachedMessage)}
		}
		out = append(out, t)
		if s.Name == contract.StartBarrierContainerName {
			break
		}
	}
	return out
}

func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// blocked tells, once per cause (barrier, attempt, container and reason), a Warning
// ReasonBarrierBlocked naming the first pod of a closed barrier stuck before it, the container
// and the cause, with how many more pods are stuck alike; and says when to look again (a pod
// unschedulable for less than UnschedulableAfter).
func (r *Reconciler) blocked(ctx context.Context, js *jobsetv1alpha2.JobSet, g jobsets.BarrierGroup, pods []barrierPod, attempt int32, now time.Time) time.Duration {
	type cause struct{ container, reason string }
	first := map[cause]*corev1.Pod{}
	what := map[cause]stuck{}
	count := map[cause]int{}
	var next time.Duration
	nn := client.ObjectKeyFromObject(js)
	for _, bp := range pods {
		p := bp.pod
		s, ok := stuckAt(p)
		if bp.nodeDown != "" {
			s, ok = stuck{reason: NodeDownReason, message: "node " + p.Spec.NodeName + " is " + bp.nodeDown}, true
		}
		if s.reason == UnschedulableReason {
			since := r.seen.since(nn, "unschedulable/"+string(p.UID), now)
			if left := UnschedulableAfter - now.Sub(since); left > 0 {
				next = soonest(next, left)
				continue
			}
		} else {
			r.seen.drop(nn, "unschedulable/"+string(p.UID))
		}
		if !ok {
			continue
		}
		c := cause{s.container, s.reason}
		count[c]++
		if f := first[c]; f == nil || p.Name < f.Name {
			first[c], what[c] = p, s
		}
	}
	for c, p := range first {
		if !r.said.Once(js.UID, fmt.Sprintf("blocked/%d/%s/%s/%s", attempt, g.Name, c.container, c.reason)) {
			continue
		}
		barrierBlocked.WithLabelValues(c.reason).Inc()
		s := what[c]
		where := "cannot be scheduled"
		switch {
		case s.reason == NodeDownReason:
			where = "is on a node that cannot be trusted, so what it last reported is stale and it does not count as waiting"
		case s.container != "":
			where = "init container " + s.container + " waits: " + s.reason
		}
		more := ""
		if n := count[c] - 1; n > 0 {
			more = fmt.Sprintf("; %d more pods of it alike", n)
		}
		ctrl.LoggerFrom(ctx).Info("A start barrier cannot open: a pod is stuck before it", "barrier", g.Name, "pod", p.Name, "container", s.container, "reason", s.reason)
		addon.Tell(r.Recorder, js, p, corev1.EventTypeWarning, ReasonBarrierBlocked, actionWait,
			"Start barrier %s (restart attempt %d) cannot open: pod %s %s: %s%s. Its pods wait until the cause is fixed, or fail at the barrier's timeout",
			g.Name, attempt, p.Name, where, strings.TrimSpace(s.message), more)
	}
	return next
}
