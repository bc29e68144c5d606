package testbed

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
)

// PartitionNode makes kwok's node name look to the control plane as a node behind a network
// partition does: kwok stops writing its status (its annotation no longer matches kwok's
// selector), its Ready condition turns Unknown, and it carries the unreachable taints that the
// node lifecycle controller puts on such a node, added at taintedAt (another machine's clock:
// a time far in the past shows that nobody reads it). Its pods stay as they were, Running:
// what their kubelet last wrote.
func PartitionNode(ctx context.Context, cs kubernetes.Interface, name string, taintedAt time.Time) error {
	// kwok writes a node's status (and plays its pods) while it holds the node's Lease: another
	// holder, for an hour, makes it let go, as a kubelet cut off stops renewing it.
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		lease, err := cs.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		lease.Spec.HolderIdentity = ptr.To("partitioned")
		lease.Spec.LeaseDurationSeconds = ptr.To[int32](3600)
		lease.Spec.RenewTime = &metav1.MicroTime{Time: time.Now()}
		_, err = cs.CoordinationV1().Leases(corev1.NamespaceNodeLease).Update(ctx, lease, metav1.UpdateOptions{})
		return err
	}); err != nil {
		return fmt.Errorf("taking the lease of node %s: %w", name, err)
	}
	// kwok may write the node's status once more before it sees the lease gone: conflicts for
	// a while on a loaded machine, not only a few milliseconds.
	return retry.RetryOnConflict(nodeWriteRetry, func() error {
		node, err := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		node.Annotations["kwok.x-k8s.io/node"] = "partitioned"
		at := metav1.NewTime(taintedAt)
		for _, effect := range []corev1.TaintEffect{corev1.TaintEffectNoSchedule, corev1.TaintEffectNoExecute} {
			t := corev1.Taint{Key: corev1.TaintNodeUnreachable, Effect: effect, TimeAdded: &at}
			if !slices.ContainsFunc(node.Spec.Taints, func(o corev1.Taint) bool { return o.MatchTaint(&t) }) {
				node.Spec.Taints = append(node.Spec.Taints, t)
			}
		}
		if node, err = cs.CoreV1().Nodes().Update(ctx, node, metav1.UpdateOptions{}); err != nil {
			return err
		}
		for i, c := range node.Status.Conditions {
			if c.Type == corev1.NodeReady {
				node.Status.Conditions[i] = corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionUnknown,
					Reason: "NodeStatusUnknown", Message: "Kubelet stopped posting node status.", LastHeartbeatTime: c.LastHeartbeatTime, LastTransitionTime: metav1.Now()}
			}
		}
		_, err = cs.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{})
		return err
	})
}

// nodeWriteRetry is how PartitionNode retries its writes of a node on a conflict: up to some
// 10 s.
var nodeWriteRetry = wait.Backoff{Steps: 25, Duration: 50 * time.Millisecond, Factor: 1.2, Cap: time.Second, Jitter: 0.1}

// TaintNode adds taint to node name.
func TaintNode(ctx context.Context, cs kubernetes.Interface, name string, taint corev1.Taint) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		node, err := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		node.Spec.Taints = append(node.Spec.Taints, taint)
		_, err = cs.CoreV1().Nodes().Update(ctx, node, metav1.UpdateOptions{})
		return err
	})
}
