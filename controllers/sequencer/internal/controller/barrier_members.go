package controller

import (
	"context"
	"fmt"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/pkg/addon"
	sequence "github.com/jobset-addons/jobset-addons/pkg/addon/checks/sequencer"
	"github.com/jobset-addons/jobset-addons/pkg/addon/jobsets"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

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
		down, err := r.nodeDown(ctx, p)
		if err != nil {
			barrierErrors.WithLabelValues("list").Inc()
			return 0, nil, err
		}
		// A pod on a node that cannot answer shows what its kubelet last wrote: it may have
		// stopped long ago, and does not count as waiting.
		out[gi].pods = append(out[gi].pods, barrierPod{pod: p, waiting: waiting && down == "", nodeDown: down})
	}
	return attempt, out, nil
}

// nodeDown says why the pod's node cannot be trusted ("" when it can, or the pod is not
// bound): deleted, or not Ready (addon.HealthOf).
func (r *BarrierReconciler) nodeDown(ctx context.Context, p *corev1.Pod) (string, error) {
	if r.Nodes == nil || p.Spec.NodeName == "" {
		return "", nil
	}
	var node corev1.Node
	if err := r.Nodes.Get(ctx, client.ObjectKey{Name: p.Spec.NodeName}, &node); apierrors.IsNotFound(err) {
		return "deleted", nil
	} else if err != nil {
		return "", fmt.Errorf("reading node %s: %w", p.Spec.NodeName, err)
	}
	if h := addon.HealthOf(&node); h != addon.NodeReady {
		return h.String(), nil
	}
	return "", nil
}

// podsOnNode enqueues the JobSets of the barrier pods on a node whose health changed, or that
// was deleted.
func (r *BarrierReconciler) podsOnNode(ctx context.Context, o client.Object) []reconcile.Request {
	var list corev1.PodList
	if err := r.Pods.List(ctx, &list, client.MatchingFields{PodNodeIndex: o.GetName()}); err != nil {
		return nil
	}
	seen := map[reconcile.Request]bool{}
	var out []reconcile.Request
	for i := range list.Items {
		for _, req := range jobsets.JobSetOf(ctx, &list.Items[i]) {
			if !seen[req] {
				seen[req] = true
				out = append(out, req)
			}
		}
	}
	return out
}
