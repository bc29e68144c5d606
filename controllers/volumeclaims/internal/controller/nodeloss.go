package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/pkg/addon"
	"github.com/jobset-addons/jobset-addons/pkg/addon/checks/volumeclaims"
	"github.com/jobset-addons/jobset-addons/pkg/addon/jobsets"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// NodeLoss acts for whenNodeLost on the per-pod PVCs of running JobSets whose volumes are
// pinned to lost nodes (pvnodes.go): Recreate deletes the PVC, and the JobSet's pods on the
// lost node, so that the Job's replacement pod gets a new, empty PVC (the Reconciler makes it
// again) and lands on another node; Keep tells that the pod waits. Nodes that are only NotReady
// or unreachable are told, and given up only with whenNodeUnreachable: Recreate.
type NodeLoss struct {
	// Client reads JobSets, the add-on's PVCs, PVs and Nodes (by NodeHostnameIndex) from the
	// cache, and deletes.
	Client client.Client
	// Reader lists the JobSet's pods from the API server.
	Reader   client.Reader
	Recorder events.EventRecorder
	Clock    clock.PassiveClock

	// told holds the PVCs (and nodes) told as waiting (Keep), once each.
	told addon.Told
	// seen holds when this process first saw each node not Ready.
	seen addon.NodesSeen
}

// SetupWithManager registers it for JobSets with policies, and for Nodes that are deleted or
// whose health changes (each enqueues every such JobSet).
func (n *NodeLoss) SetupWithManager(ctx context.Context, mgr ctrl.Manager, concurrency int) error {
	if err := addon.ForgetGone(mgr, addon.DefaultForgetEvery, &n.told, &jobsetv1alpha2.JobSetList{}); err != nil {
		return err
	}
	if err := mgr.GetFieldIndexer().IndexField(ctx, &corev1.Node{}, NodeHostnameIndex, NodeHostname); err != nil {
		return fmt.Errorf("indexing nodes by hostname: %w", err)
	}
	nodes := handler.Funcs{
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			if node, ok := e.ObjectNew.(*corev1.Node); ok {
				n.seen.Since(node, n.Clock.Now()) // seen now: the grace counts from here
			}
			n.enqueueAll(ctx, q)
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			n.seen.Forget(e.Object.GetUID())
			n.enqueueAll(ctx, q)
		},
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("volumeclaims-nodeloss").
		WatchesRawSource(addon.For(mgr, &jobsetv1alpha2.JobSet{}, hasPolicies())).
		WatchesRawSource(addon.Watches(mgr, &corev1.Node{}, nodes, addon.NodeHealthChanges(false))).
		WithOptions(controller.Options{MaxConcurrentReconciles: concurrency}).
		Complete(addon.Busy(n))
}

func (n *NodeLoss) enqueueAll(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	for _, r := range n.allJobSets(ctx) {
		q.Add(r)
	}
}

// allJobSets enqueues every JobSet with policies.
func (n *NodeLoss) allJobSets(ctx context.Context) []reconcile.Request {
	var list jobsetv1alpha2.JobSetList
	if err := n.Client.List(ctx, &list); err != nil {
		return nil
	}
	var out []reconcile.Request
	for i := range list.Items {
		if js := &list.Items[i]; volumeclaims.Uses(js) && !finished(js) {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: js.Namespace, Name: js.Name}})
		}
	}
	return out
}

// Reconcile looks at the JobSet's per-pod PVCs, and acts for those on lost nodes.
func (n *NodeLoss) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	ctx, js, ok, err := addon.ReconcileJobSet(ctx, n.Client, req.NamespacedName)
	if err != nil || !ok || finished(js) {
		return ctrl.Result{}, err
	}
	policies, ok, errs := volumeclaims.Parse(js)
	if !ok || len(errs) > 0 {
		return ctrl.Result{}, nil // the Reconciler tells
	}
	retention := map[string]contract.VolumeRetentionPolicy{}
	for _, p := range policies {
		for _, name := range p.TemplateNames() {
			if !p.Shared() {
				retention[name] = p.RetentionPolicy
			}
		}
	}
	var pvcs corev1.PersistentVolumeClaimList
	if err := n.Client.List(ctx, &pvcs, client.InNamespace(js.Namespace), client.MatchingLabels{
		contract.ManagedByLabelKey: contract.VolumeClaimsManagedByValue, contract.JobSetNameLabelKey: js.Name,
	}); err != nil {
		return ctrl.Result{}, err
	}
	var res ctrl.Result
	var errList []error
	for i := range pvcs.Items {
		pvc := &pvcs.Items[i]
		r, ok := retention[pvc.Labels[contract.VolumeClaimTemplateLabelKey]]
		if !ok || pvc.Spec.VolumeName == "" || !pvc.DeletionTimestamp.IsZero() {
			continue
		}
		after, err := n.claim(ctx, js, pvc, r)
		errList = append(errList, err)
		if after > 0 && (res.RequeueAfter == 0 || after < res.RequeueAfter) {
			res.RequeueAfter = after
		}
	}
	return res, errors.Join(errList...)
}

// claim acts for one Bound per-pod PVC; it returns when to look again (0: on a change).
func (n *NodeLoss) claim(ctx context.Context, js *jobsetv1alpha2.JobSet, pvc *corev1.PersistentVolumeClaim, r contract.VolumeRetentionPolicy) (time.Duration, error) {
	pv := &corev1.PersistentVolume{}
	if err := n.Client.Get(ctx, types.NamespacedName{Name: pvc.Spec.VolumeName}, pv); err != nil {
		return 0, client.IgnoreNotFound(err)
	}
	hostnames, ok := pinnedNodes(pv)
	if !ok {
		return 0, nil // no node affinity by hostname: never lost
	}
	nodes, err := matchingNodes(ctx, n.Client, pv, hostnames)
	if err != nil {
		return 0, err
	}
	now := n.Clock.Now()
	loss := lossOf(hostnames, nodes, volumeclaims.NodeLostGrace(r), now, func(node *corev1.Node) time.Time {
		since, _ := n.seen.Since(node, now)
		return since
	})
	switch {
	case loss.state == notLost:
		return loss.after, nil
	case r.WhenNodeLost == contract.NodeLostRecreate && (loss.state == nodesLost || r.WhenNodeUnreachable == contract.NodeLostRecreate):
		if err := n.recreate(ctx, js, pvc, pv, loss); errors.Is(err, errDeleteRefused) {
			return refusedRetry, nil
		} else if err != nil {
			return 0, err
		}
		return 0, nil
	case loss.state == nodesUnreachable:
		if n.told.Once(js.UID, ReasonNodeUnreachable+"/"+pvc.Name+"/"+strings.Join(loss.nodes, ",")) {
			nodeLost.WithLabelValues("unreachable").Inc()
			addon.Tell(n.Recorder, js, claimRef(js, pvc.Name), corev1.EventTypeWarning, ReasonNodeUnreachable, actionKeep,
				"PersistentVolumeClaim %s waits: its volume %s can only be used on nodes that do not answer (%s), and its pods there may still run behind a partition, so its data is kept (whenNodeUnreachable: Keep); once the machine is known to be down, taint the node %s=nodeshutdown:NoExecute (or delete the Node) and whenNodeLost applies",
				pvc.Name, pv.Name, loss.why, corev1.TaintNodeOutOfService)
		}
		return 0, nil
	}
	if n.told.Once(js.UID, ReasonNodeLostKept+"/"+pvc.Name+"/"+loss.why) {
		nodeLost.WithLabelValues("kept").Inc()
		addon.Tell(n.Recorder, js, claimRef(js, pvc.Name), corev1.EventTypeWarning, ReasonNodeLostKept, actionKeep,
			"PersistentVolumeClaim %s waits: its volume %s can only be used on a lost node (%s), and whenNodeLost is Keep: its pod runs once the node is back; to give up the volume's data and run on another node, delete the PVC (and the pod stuck on the node), or use whenNodeLost: Recreate",
			pvc.Name, pv.Name, loss.why)
	}
	return 0, nil
}

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
