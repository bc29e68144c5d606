package controller

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/jobset-addons/jobset-addons/pkg/addon"
)

// What makes a node lost for whenNodeLost: the PV of a per-pod PVC can be used only on nodes
// pinned by kubernetes.io/hostname (a local PV; the local-path and hostPath provisioners pin
// theirs that way). Its node affinity is matched against the Nodes' labels, as the scheduler matches
// it: a node's name need not be its hostname label (kubelet --hostname-override, several
// clouds). The PV is lost when no Node matches it any more (deleted), or every Node that does is
// tainted node.kubernetes.io/out-of-service (the machine is down). When its Nodes are only
// NotReady or unreachable, the PV is unreachable once the add-on has seen them so for the
// grace: their pods may still run behind a partition. A PV without node affinity, or pinned by
// any other label (a zone, say, whose nodes an autoscaler may add again), is never lost.

// NodeHostnameIndex indexes Nodes by their kubernetes.io/hostname label.
const NodeHostnameIndex = "volumeclaims.nodeHostname"

// NodeHostname is the value NodeHostnameIndex indexes a Node by.
func NodeHostname(o client.Object) []string {
	if h, ok := o.GetLabels()[corev1.LabelHostname]; ok {
		return []string{h}
	}
	return nil
}

// pinnedNodes returns the kubernetes.io/hostname values a PV can be used on when every term of
// its required node affinity names hosts by that label; ok is false for any other PV.
func pinnedNodes(pv *corev1.PersistentVolume) (hostnames []string, ok bool) {
	na := pv.Spec.NodeAffinity
	if na == nil || na.Required == nil || len(na.Required.NodeSelectorTerms) == 0 {
		return nil, false
	}
	for _, term := range na.Required.NodeSelectorTerms {
		found := false
		for _, e := range term.MatchExpressions {
			if e.Key == corev1.LabelHostname && e.Operator == corev1.NodeSelectorOpIn && len(e.Values) > 0 {
				hostnames = append(hostnames, e.Values...)
				found = true
			}
		}
		if !found {
			return nil, false
		}
	}
	slices.Sort(hostnames)
	return slices.Compact(hostnames), true
}

// matchingNodes lists the Nodes the PV can be used on: those labelled with one of its
// hostnames (by NodeHostnameIndex) that match its whole required node affinity.
func matchingNodes(ctx context.Context, c client.Reader, pv *corev1.PersistentVolume, hostnames []string) ([]*corev1.Node, error) {
	sel := nodeaffinity.NewLazyErrorNodeSelector(pv.Spec.NodeAffinity.Required)
	var out []*corev1.Node
	for _, h := range hostnames {
		var list corev1.NodeList
		if err := c.List(ctx, &list, client.MatchingFields{NodeHostnameIndex: h}); err != nil {
			return nil, fmt.Errorf("listing the nodes of hostname %s: %w", h, err)
		}
		for i := range list.Items {
			if ok, _ := sel.Match(&list.Items[i]); ok {
				out = append(out, &list.Items[i])
			}
		}
	}
	return out, nil
}

// lossState is how lost a PV's nodes are.
type lossState int

const (
	// notLost: a node is Ready, or the unreachable ones are within the grace.
	notLost lossState = iota
	// nodesLost: deleted, or out of service: the data is gone with the machine.
	nodesLost
	// nodesUnreachable: NotReady or unreachable for the grace, some maybe out of service: the
	// machine may still run its pods.
	nodesUnreachable
)

// nodeLoss is what is known of the loss of a PV's nodes.
type nodeLoss struct {
	state lossState
	// why says how, for an Event; nodes names the Nodes.
	why   string
	nodes []string
	// after, when notLost: the time left before the unreachable nodes are past the grace (0:
	// never, as things stand).
	after time.Duration
}

// lossOf judges the PV of hostnames by the Nodes that match it, given the grace and when this
// process first saw each of them not Ready (since).
func lossOf(hostnames []string, nodes []*corev1.Node, grace time.Duration, now time.Time, since func(*corev1.Node) time.Time) nodeLoss {
	if len(nodes) == 0 {
		return nodeLoss{state: nodesLost, why: fmt.Sprintf("no node labelled %s=%s exists (deleted)", corev1.LabelHostname, strings.Join(hostnames, ","))}
	}
	var whys, names []string
	var longest time.Duration
	state := nodesLost
	for _, n := range nodes {
		names = append(names, n.Name)
		switch addon.HealthOf(n) {
		case addon.NodeReady:
			return nodeLoss{}
		case addon.NodeOutOfService:
			whys = append(whys, fmt.Sprintf("node %s is tainted %s", n.Name, corev1.TaintNodeOutOfService))
		default:
			seen := since(n)
			if left := seen.Add(grace).Sub(now); left > 0 {
				longest = max(longest, left)
				continue
			}
			state = nodesUnreachable
			whys = append(whys, fmt.Sprintf("node %s has been NotReady or unreachable for %s, as volumeclaims saw it", n.Name, now.Sub(seen).Round(time.Second)))
		}
	}
	if longest > 0 {
		return nodeLoss{after: longest}
	}
	return nodeLoss{state: state, why: strings.Join(whys, ", "), nodes: names}
}
