package controller

import (
	"context"
	"fmt"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

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
		out[gi].pods = append(out[gi].pods, barrierPod{pod: p, waiting: waiting})
	}
	return attempt, out, nil
}
