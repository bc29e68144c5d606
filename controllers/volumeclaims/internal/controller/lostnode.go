package controller

import (
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// What makes a node lost for whenNodeLost: the PV of a per-pod PVC can be used only on nodes
// named by kubernetes.io/hostname (a local PV; the local-path and hostPath provisioners pin
// theirs so), and every one of them is deleted, or NotReady with the unreachable taint for longer
// than the grace. A PV without node affinity, or pinned by any other label (a zone, say, whose
// nodes an autoscaler may add again), is never lost.

// pinnedNodes returns the nodes a PV can be used on when its required node affinity names them
// by kubernetes.io/hostname in every term; ok is false for any other PV.
func pinnedNodes(pv *corev1.PersistentVolume) (nodes []string, ok bool) {
	na := pv.Spec.NodeAffinity
	if na == nil || na.Required == nil || len(na.Required.NodeSelectorTerms) == 0 {
		return nil, false
	}
	for _, term := range na.Required.NodeSelectorTerms {
		found := false
		for _, e := range term.MatchExpressions {
			if e.Key == corev1.LabelHostname && e.Operator == corev1.NodeSelectorOpIn && len(e.Values) > 0 {
				nodes = append(nodes, e.Values...)
				found = true
			}
		}
		if !found {
			return nil, false
		}
	}
	slices.Sort(nodes)
	return slices.Compact(nodes), true
}

// nodeLoss is what is known of the loss of a PV's nodes.
type nodeLoss struct {
	// lost: every node is lost, why says how (for an Event).
	lost bool
	why  string
	// after, when not lost: the time left before the NotReady nodes count as lost (0: never,
	// as things stand).
	after time.Duration
}

// lossOf decides whether the nodes (found: the Node of each name that exists) are all lost at
// now, given the grace.
func lossOf(names []string, found map[string]*corev1.Node, grace time.Duration, now time.Time) nodeLoss {
	var whys []string
	var longest time.Duration
	for _, name := range names {
		n := found[name]
		if n == nil {
			whys = append(whys, fmt.Sprintf("node %s is deleted", name))
			continue
		}
		since, unreachable := unreachableSince(n)
		if !unreachable {
			return nodeLoss{}
		}
		if left := since.Add(grace).Sub(now); left > 0 {
			longest = max(longest, left)
			continue
		}
		whys = append(whys, fmt.Sprintf("node %s is NotReady and unreachable since %s (nodeLostGracePeriod %s)", name, since.UTC().Format(time.RFC3339), grace))
	}
	if longest > 0 {
		return nodeLoss{after: longest}
	}
	return nodeLoss{lost: true, why: strings.Join(whys, ", ")}
}

// unreachableSince tells whether the node is not Ready and carries the unreachable taint, and
// since when (the taint's time, else the Ready condition's last transition).
func unreachableSince(n *corev1.Node) (time.Time, bool) {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
			return time.Time{}, false
		}
	}
	for _, t := range n.Spec.Taints {
		if t.Key != corev1.TaintNodeUnreachable {
			continue
		}
		if t.TimeAdded != nil {
			return t.TimeAdded.Time, true
		}
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady {
				return c.LastTransitionTime.Time, true
			}
		}
		return time.Time{}, true
	}
	return time.Time{}, false
}
