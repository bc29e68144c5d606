package controller

import (
	"context"
	"fmt"
	"slices"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/pkg/addon"
	"github.com/jobset-addons/jobset-addons/pkg/addon/jobsets"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// recreate gives up a per-pod PVC whose volume is on a lost node (whenNodeLost: Recreate): it
// force-deletes the JobSet's pods that mount it and are bound to that node (they can never run
// again, and Kubernetes keeps a PVC while a pod scheduled with it exists), then deletes the PVC.
// The Reconciler makes the PVC again, empty, once it is gone; the Job's replacement pod mounts
// the new one on another node. Pods not yet scheduled are left: they wait for the new PVC.
func (n *NodeLoss) recreate(ctx context.Context, js *jobsetv1alpha2.JobSet, pvc *corev1.PersistentVolumeClaim, pv *corev1.PersistentVolume, why string) error {
	var pods corev1.PodList
	if err := n.Reader.List(ctx, &pods, client.InNamespace(js.Namespace), client.MatchingLabels{contract.JobSetUIDLabelKey: string(js.UID)}); err != nil {
		return fmt.Errorf("listing the pods of %s: %w", js.Name, err)
	}
	// Only pods whose controller is a Job the JobSet made: a pod that merely carries its labels
	// is not the add-on's to delete.
	var jobs batchv1.JobList
	if err := n.Reader.List(ctx, &jobs, client.InNamespace(js.Namespace), client.MatchingLabels{contract.JobSetNameLabelKey: js.Name}); err != nil {
		return fmt.Errorf("listing the Jobs of %s: %w", js.Name, err)
	}
	members := jobsets.MembersOf(js, jobs.Items)
	lost, _ := pinnedNodes(pv)
	var stuck []string
	for i := range pods.Items {
		p := &pods.Items[i]
		if !mountsClaim(p, pvc.Name) || !slices.Contains(lost, p.Spec.NodeName) || members.JobOf(p) == nil {
			continue
		}
		if err := n.Client.Delete(ctx, p, client.GracePeriodSeconds(0), client.Preconditions{UID: &p.UID}); err != nil && !apierrors.IsNotFound(err) {
			addon.CountObject("Pod", addon.ActionFailed, 1)
			return fmt.Errorf("deleting pod %s stuck on a lost node: %w", p.Name, err)
		}
		addon.CountObject("Pod", addon.ActionDeleted, 1)
		stuck = append(stuck, p.Name)
	}
	uid := pvc.UID
	if err := n.Client.Delete(ctx, pvc, client.Preconditions{UID: &uid}); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		reconcileErrors.WithLabelValues("delete").Inc()
		addon.CountObject(KindPVC, addon.ActionFailed, 1)
		return fmt.Errorf("deleting %s, on a lost node: %w", pvc.Name, err)
	}
	nodeLost.WithLabelValues("recreated").Inc()
	addon.CountObject(KindPVC, addon.ActionDeleted, 1)
	ctrl.LoggerFrom(ctx).Info("Gave up a PVC on a lost node", "pvc", pvc.Name, "pv", pv.Name, "why", why, "pods", stuck)
	note := fmt.Sprintf("Gave up the data of PersistentVolumeClaim %s: its volume %s can only be used on a lost node (%s), and whenNodeLost is Recreate", pvc.Name, pv.Name, why)
	if len(stuck) > 0 {
		note += fmt.Sprintf("; deleted the pods stuck there: %s", names(stuck))
	}
	note += "; the replacement pod gets a new, empty PVC of the same name on another node"
	addon.Tell(n.Recorder, js, claimRef(js, pvc.Name), corev1.EventTypeWarning, ReasonNodeLost, actionDelete, "%s", note)
	n.Recorder.Eventf(pvc, nil, corev1.EventTypeWarning, ReasonNodeLost, actionDelete, "%s", addon.CutNote(note))
	return nil
}
