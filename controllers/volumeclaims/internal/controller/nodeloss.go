package controller

import (
	"context"
	"errors"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/pkg/addon"
	policy "github.com/jobset-addons/jobset-addons/pkg/addon/checks/volumeclaims"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// NodeLoss acts for whenNodeLost on the per-pod PVCs of running JobSets whose volumes are
// pinned to a lost node (lostnode.go): Recreate deletes the PVC, and the JobSet's pods on the
// lost node, so that the Job's replacement pod gets a new, empty PVC (the Reconciler makes it
// again) and lands on another node; Keep tells that the pod waits.
type NodeLoss struct {
	// Client reads JobSets, the add-on's PVCs, PVs and Nodes from the cache, and deletes.
	Client client.Client
	// Reader lists the JobSet's pods from the API server.
	Reader   client.Reader
	Recorder events.EventRecorder
	Now      func() time.Time

	// told holds the PVCs (and nodes) told as waiting (Keep), once each.
	told addon.Told
}

// SetupWithManager registers it for JobSets with policies, and for Nodes that go or stop being
// Ready (each enqueues every such JobSet).
func (n *NodeLoss) SetupWithManager(mgr ctrl.Manager, concurrency int) error {
	if err := addon.ForgetGone(mgr, addon.DefaultForgetEvery, &n.told, &jobsetv1alpha2.JobSetList{}); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("volumeclaims-nodeloss").
		WatchesRawSource(addon.For(mgr, &jobsetv1alpha2.JobSet{}, hasPolicies())).
		WatchesRawSource(addon.Watches(mgr, &corev1.Node{}, handler.EnqueueRequestsFromMapFunc(n.allJobSets), nodeReachability())).
		WithOptions(controller.Options{MaxConcurrentReconciles: concurrency}).
		Complete(addon.Busy(n))
}

// nodeReachability passes a Node's deletion, and a change of its readiness or of its
// unreachable taint; not its heartbeats.
func nodeReachability() predicate.Predicate {
	return predicate.Funcs{
		CreateFunc: func(event.CreateEvent) bool { return false },
		UpdateFunc: func(e event.UpdateEvent) bool {
			a, aok := e.ObjectOld.(*corev1.Node)
			b, bok := e.ObjectNew.(*corev1.Node)
			if !aok || !bok {
				return false
			}
			sa, ua := unreachableSince(a)
			sb, ub := unreachableSince(b)
			return ua != ub || !sa.Equal(sb)
		},
	}
}

// allJobSets enqueues every JobSet with policies.
func (n *NodeLoss) allJobSets(ctx context.Context, _ client.Object) []reconcile.Request {
	var list jobsetv1alpha2.JobSetList
	if err := n.Client.List(ctx, &list); err != nil {
		return nil
	}
	var out []reconcile.Request
	for i := range list.Items {
		if js := &list.Items[i]; policy.Uses(js) && !finished(js) {
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
	policies, ok, errs := policy.Parse(js)
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
	names, ok := pinnedNodes(pv)
	if !ok {
		return 0, nil // no node affinity by hostname: never lost
	}
	found := map[string]*corev1.Node{}
	for _, name := range names {
		node := &corev1.Node{}
		if err := n.Client.Get(ctx, types.NamespacedName{Name: name}, node); err == nil {
			found[name] = node
		} else if client.IgnoreNotFound(err) != nil {
			return 0, err
		}
	}
	grace := contract.DefaultVolumeNodeLostGracePeriod
	if r.NodeLostGracePeriod != nil {
		grace = r.NodeLostGracePeriod.Duration
	}
	loss := lossOf(names, found, grace, n.now())
	switch {
	case !loss.lost:
		return loss.after, nil
	case r.WhenNodeLost == contract.NodeLostRecreate:
		return 0, n.recreate(ctx, js, pvc, pv, loss.why)
	}
	if n.told.Once(js.UID, ReasonNodeLostKept+"/"+pvc.Name+"/"+loss.why) {
		nodeLost.WithLabelValues("kept").Inc()
		addon.Tell(n.Recorder, js, claimRef(js, pvc.Name), corev1.EventTypeWarning, ReasonNodeLostKept, actionKeep,
			"PersistentVolumeClaim %s waits: its volume %s can only be used on a lost node (%s), and whenNodeLost is Keep: its pod runs once the node is back; to give up the volume's data and run on another node, delete the PVC (and the pod stuck on the node), or use whenNodeLost: Recreate",
			pvc.Name, pv.Name, loss.why)
	}
	return 0, nil
}

func (n *NodeLoss) now() time.Time {
	if n.Now != nil {
		return n.Now()
	}
	return time.Now()
}
