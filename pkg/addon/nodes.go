package addon

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
)

// NodeHealth is what an add-on trusts of a node: whether what its kubelet last wrote (a pod's
// status, its containers' states) still holds, and whether the machine is known to be down.
type NodeHealth int

const (
	// NodeReady: the node is Ready and carries no taint that says otherwise.
	NodeReady NodeHealth = iota
	// NodeUnreachable: the node is not Ready (its Ready condition False or Unknown, or none),
	// or tainted node.kubernetes.io/unreachable or not-ready. Its pods may still run, and
	// write, behind a partition: what they last reported is stale, and nothing says they
	// stopped.
	NodeUnreachable
	// NodeOutOfService: the node carries node.kubernetes.io/out-of-service, Kubernetes' mark
	// of a node whose machine is shut down (non-graceful node shutdown), put there by an
	// operator or a cloud provider: its pods no longer run.
	NodeOutOfService
)

// String names the health in Events.
func (h NodeHealth) String() string {
	switch h {
	case NodeUnreachable:
		return "NotReady or unreachable"
	case NodeOutOfService:
		return "out of service (" + corev1.TaintNodeOutOfService + ")"
	}
	return "Ready"
}

// HealthOf judges the node by what the control plane wrote on it.
func HealthOf(n *corev1.Node) NodeHealth {
	ready := false
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			ready = c.Status == corev1.ConditionTrue
		}
	}
	health := NodeReady
	if !ready {
		health = NodeUnreachable
	}
	for _, t := range n.Spec.Taints {
		switch t.Key {
		case corev1.TaintNodeOutOfService:
			return NodeOutOfService
		case corev1.TaintNodeUnreachable, corev1.TaintNodeNotReady:
			health = NodeUnreachable
		}
	}
	return health
}

// NodeDown says why what node's kubelet last wrote (a pod's status, its containers' states)
// cannot be trusted: "deleted", or its health (HealthOf) when it is not Ready; "" when it can,
// or when name is "" (a pod not bound). r reads Nodes (a cache of trimmed Nodes will do).
func NodeDown(ctx context.Context, r client.Reader, name string) (string, error) {
	if name == "" {
		return "", nil
	}
	var node corev1.Node
	if err := r.Get(ctx, client.ObjectKey{Name: name}, &node); apierrors.IsNotFound(err) {
		return "deleted", nil
	} else if err != nil {
		return "", fmt.Errorf("reading node %s: %w", name, err)
	}
	if h := HealthOf(&node); h != NodeReady {
		return h.String(), nil
	}
	return "", nil
}

// TrimNode keeps, of a Node in a cache, what HealthOf and a PV's node affinity read: its name,
// labels, taints and Ready condition (without its message or heartbeats). Use it with Trimmed.
func TrimNode(obj any) {
	n, ok := obj.(*corev1.Node)
	if !ok {
		return
	}
	n.Annotations, n.ManagedFields, n.OwnerReferences = nil, nil, nil
	n.Spec = corev1.NodeSpec{Taints: n.Spec.Taints, Unschedulable: n.Spec.Unschedulable}
	var conds []corev1.NodeCondition
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			conds = append(conds, corev1.NodeCondition{Type: c.Type, Status: c.Status, Reason: c.Reason})
		}
	}
	n.Status = corev1.NodeStatus{Conditions: conds}
}

// NodeHealthChanges passes a Node's deletion and a change of its health (HealthOf), not its
// heartbeats; creations only when create is true (a cache's first list, after a restart).
func NodeHealthChanges(create bool) predicate.Predicate {
	return predicate.Funcs{
		CreateFunc: func(event.CreateEvent) bool { return create },
		UpdateFunc: func(e event.UpdateEvent) bool {
			a, aok := e.ObjectOld.(*corev1.Node)
			b, bok := e.ObjectNew.(*corev1.Node)
			return aok && bok && HealthOf(a) != HealthOf(b)
		},
	}
}

// NodesSeen remembers, on the add-on's own clock, when this process first saw each node not
// Ready. How long a node has been unreachable is never read off the node's taints or
// conditions (another machine's clock, and a stale one behind a partition). A process that
// starts again counts again from when it first sees the node: later, never sooner.
type NodesSeen struct {
	mu sync.Mutex
	at map[types.UID]time.Time
}

// Since is when the node was first seen unreachable or out of service by this process (now,
// when it is seen so for the first time); ok is false, and the node forgotten, when it is Ready.
func (s *NodesSeen) Since(n *corev1.Node, now time.Time) (since time.Time, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if HealthOf(n) == NodeReady {
		delete(s.at, n.UID)
		return time.Time{}, false
	}
	if s.at == nil {
		s.at = map[types.UID]time.Time{}
	}
	if t, seen := s.at[n.UID]; seen {
		return t, true
	}
	s.at[n.UID] = now
	return now, true
}

// Forget drops a node (deleted).
func (s *NodesSeen) Forget(uid types.UID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.at, uid)
}
