package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/pkg/addon"
	"github.com/jobset-addons/jobset-addons/pkg/addon/jobsets"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// recreate gives up a per-pod PVC whose volume is on lost nodes (whenNodeLost: Recreate), or on
// unreachable ones (whenNodeUnreachable: Recreate): it force-deletes the JobSet's pods that
// mount it and are bound to those nodes, or to a node that is gone (they can never run again,
// and Kubernetes keeps a PVC while a pod scheduled with it exists), then deletes the PVC. The
// Reconciler makes the PVC again, empty, once it is gone; the Job's replacement pod mounts the
// new one on another node. Pods not yet scheduled are left: they wait for the new PVC.
func (n *NodeLoss) recreate(ctx context.Context, js *jobsetv1alpha2.JobSet, pvc *corev1.PersistentVolumeClaim, pv *corev1.PersistentVolume, loss nodeLoss) error {
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
	var stuck []string
	for i := range pods.Items {
		p := &pods.Items[i]
		if !mountsClaim(p, pvc.Name) || members.JobOf(p) == nil {
			continue
		}
		on, err := n.onLostNode(ctx, p, loss)
		if err != nil {
			return err
		}
		if !on {
			continue
		}
		if err := n.Client.Delete(ctx, p, client.GracePeriodSeconds(0), client.Preconditions{UID: &p.UID}); err != nil && !apierrors.IsNotFound(err) {
			addon.CountObject("Pod", addon.ActionFailed, 1)
			if n.refused(js, p, err) {
				return errDeleteRefused
			}
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
	ctrl.LoggerFrom(ctx).Info("Gave up a PVC on a lost node", "pvc", pvc.Name, "pv", pv.Name, "why", loss.why, "pods", stuck)
	policy := "whenNodeLost is Recreate"
	if loss.state == nodesUnreachable {
		policy = "whenNodeUnreachable is Recreate"
	}
	note := fmt.Sprintf("Gave up the data of PersistentVolumeClaim %s: its volume %s can only be used on a lost node (%s), and %s", pvc.Name, pv.Name, loss.why, policy)
	if len(stuck) > 0 {
		note += fmt.Sprintf("; deleted the pods stuck there: %s", names(stuck))
	}
	note += "; the replacement pod gets a new, empty PVC of the same name on another node"
	addon.Tell(n.Recorder, js, claimRef(js, pvc.Name), corev1.EventTypeWarning, ReasonNodeLost, actionDelete, "%s", note)
	n.Recorder.Eventf(pvc, nil, corev1.EventTypeWarning, ReasonNodeLost, actionDelete, "%s", addon.CutNote(note))
	return nil
}

// onLostNode tells whether pod p is bound to one of the loss's nodes, or to a node that is gone.
func (n *NodeLoss) onLostNode(ctx context.Context, p *corev1.Pod, loss nodeLoss) (bool, error) {
	if p.Spec.NodeName == "" {
		return false, nil
	}
	if slices.Contains(loss.nodes, p.Spec.NodeName) {
		return true, nil
	}
	err := n.Client.Get(ctx, types.NamespacedName{Name: p.Spec.NodeName}, &corev1.Node{})
	if apierrors.IsNotFound(err) {
		return true, nil
	}
	return false, err
}

// errDeleteRefused: the API server refused to delete a pod on the lost node; told.
var errDeleteRefused = errors.New("a pod delete was refused")

// refusedRetry is how soon a PVC whose pod's delete was refused is looked at again: Kubernetes
// may evict the pod meanwhile (nothing else says so: pods are not watched).
const refusedRetry = 5 * time.Second

// refused tells, once per pod and cause, a pod delete the API server refuses (a
// ValidatingAdmissionPolicy such as the chart's admissionPolicies.limitAddonWrites, RBAC), and
// whether it was one: the PVC is not given up while the pod is there, and it is looked at again
// after refusedRetry.
func (n *NodeLoss) refused(js *jobsetv1alpha2.JobSet, p *corev1.Pod, err error) bool {
	if !apierrors.IsInvalid(err) && !apierrors.IsForbidden(err) {
		return false
	}
	if n.told.Once(js.UID, ReasonPodDeleteRefused+"/"+p.Name+"/"+err.Error()) {
		nodeLost.WithLabelValues("refused").Inc()
		addon.Tell(n.Recorder, js, p, corev1.EventTypeWarning, ReasonPodDeleteRefused, actionDelete,
			"Deleting pod %s, stuck on a lost node, was refused, so its PersistentVolumeClaim is not given up yet: %v. volumeclaims retries; with the chart's admissionPolicies.limitAddonWrites it may delete such a pod once Kubernetes evicts it (at once from a node tainted %s, after the pod's tolerationSeconds for %s)",
			p.Name, err, corev1.TaintNodeOutOfService, corev1.TaintNodeUnreachable)
	}
	return true
}
