package barrier

import (
	"context"
	"fmt"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/pkg/addon"
	"github.com/jobset-addons/jobset-addons/pkg/addon/checks/sequencer"
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
func (r *Reconciler) members(ctx context.Context, js *jobsetv1alpha2.JobSet, stages []contract.Stage) (int32, []groupPods, error) {
	var jobs batchv1.JobList
	if err := r.Client.List(ctx, &jobs, client.InNamespace(js.Namespace), client.MatchingFields{jobsets.NameIndex: js.Name}); err != nil {
		barrierErrors.WithLabelValues("list").Inc()
		return 0, nil, fmt.Errorf("listing Jobs: %w", err)
	}
	var list corev1.PodList
	if err := r.Pods.List(ctx, &list, client.InNamespace(js.Namespace), client.MatchingFields{jobsets.NameIndex: js.Name}); err != nil {
		barrierErrors.WithLabelValues("list").Inc()
		return 0, nil, fmt.Errorf("listing pods: %w", err)
	}
	of := jobsets.MembersOf(js, jobs.Items)
	attempt := of.Attempt(js)
	groups := sequencer.BarrierGroups(js, stages)
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
		if !member || !known || a != attempt || p.DeletionTimestamp != nil || jobsets.PodFinished(p) || !sequencer.HasBarrier(&p.Spec) {
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
// bound): deleted, or not Ready (addon.NodeDown).
func (r *Reconciler) nodeDown(ctx context.Context, p *corev1.Pod) (string, error) {
	if r.Nodes == nil {
		return "", nil
	}
	return addon.NodeDown(ctx, r.Nodes, p.Spec.NodeName)
}

// podsOnNode enqueues the JobSets of the barrier pods on a node whose health changed, or that
// was deleted.
func (r *Reconciler) podsOnNode(ctx context.Context, o client.Object) []reconcile.Request {
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
