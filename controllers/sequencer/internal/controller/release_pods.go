package controller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/controllers/sequencer/internal/jobsetpods"
	"github.com/jobset-addons/jobset-addons/pkg/addon"
	"github.com/jobset-addons/jobset-addons/pkg/addon/checks/sequencer"
	"github.com/jobset-addons/jobset-addons/pkg/addon/jobsets"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// gateRemoval removes the sequencer's gate, and only it, from a pod (strategic merge patch on
// spec.schedulingGates, whose merge key is name), and in the same patch its gated label: the
// controller caches only the pods with that label, and a released pod, which it never needs
// again, leaves its cache (make bench ADDON=scale: the finished pods of 250 sequenced JobSets,
// still labelled, were the largest part of its memory).
var gateRemoval = client.RawPatch(contract.SequencerReleasePatchType, contract.SequencerReleasePatch)

// releasePods removes the gate from the gated pods of the released ReplicatedJobs of the
// attempt, r.Workers at a time. A pod counts only through its Job (of.PodOf): its controller a
// Job that the JobSet's controller made, its ReplicatedJob and attempt the Job's. A pod that
// anyone else made, whatever its labels, is never released.
func (r *Reconciler) releasePods(ctx context.Context, js *jobsetv1alpha2.JobSet, of jobsets.Members, released sets.Set[string], attempt int32) error {
	if released.Len() == 0 {
		return nil
	}
	var pods corev1.PodList
	if err := r.Client.List(ctx, &pods, client.InNamespace(js.Namespace), client.MatchingFields{JobSetNameIndex: js.Name}); err != nil {
		reconcileErrors.WithLabelValues("list").Inc()
		return fmt.Errorf("listing pods: %w", err)
	}
	var todo []*corev1.Pod
	for i := range pods.Items {
		p := &pods.Items[i]
		rj, a, member := of.PodOf(p)
		if member && released.Has(rj) && a == attempt && p.DeletionTimestamp == nil &&
			sequencer.HasGate(p.Spec.SchedulingGates) && !r.releasedTracker().Pending(p) {
			todo = append(todo, p)
		}
	}
	if len(todo) == 0 {
		return nil
	}
	err := jobsetpods.Patch(ctx, r.Client, r.Workers, todo, gateRemoval, r.releasedTracker(), reconcileErrors.WithLabelValues("patch-pod"), podsReleased)
	ctrl.LoggerFrom(ctx).V(2).Info("Released pods", "count", len(todo))
	return err
}

// releasedTracker is r.released, made on first use.
func (r *Reconciler) releasedTracker() *addon.Changed {
	return jobsetpods.Tracker(&r.mu, &r.released, r.Clock)
}
