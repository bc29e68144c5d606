package barrier

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/jobset-addons/jobset-addons/pkg/addon"
	"github.com/jobset-addons/jobset-addons/pkg/addon/checks/sequencer"
	"github.com/jobset-addons/jobset-addons/pkg/addon/jobsets"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// PodNodeIndex indexes the barrier pods by their node.
const PodNodeIndex = "sequencer.podNode"

// PodCache is a cache of the pods of JobSets with a start barrier only (the webhook's scope
// label), each trimmed to what the reconciler reads: its labels, its controller reference, its
// barrier-state annotation, its node, whether it has the barrier container, its phase, the
// state of its init containers up to the barrier (waiting reasons and messages cut short: what
// keeps a pod from the barrier) and whether it is unschedulable. It is a cache of its own: the
// manager's cache holds only the gated pods, and an informer has only one label selector.
func PodCache(mgr ctrl.Manager) (cache.Cache, error) {
	by := addon.Trimmed(cache.ByObject{Label: labels.SelectorFromSet(labels.Set{contract.StartBarrierLabelKey: contract.EnabledValue})}, trimBarrierPod)
	c, err := cache.New(mgr.GetConfig(), cache.Options{
		HTTPClient: mgr.GetHTTPClient(), Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper(),
		ByObject: map[client.Object]cache.ByObject{&corev1.Pod{}: by},
	})
	if err != nil {
		return nil, fmt.Errorf("making the barrier pods' cache: %w", err)
	}
	if err := c.IndexField(context.Background(), &corev1.Pod{}, jobsets.NameIndex, jobsets.IndexByName); err != nil {
		return nil, fmt.Errorf("indexing barrier pods: %w", err)
	}
	if err := c.IndexField(context.Background(), &corev1.Pod{}, PodNodeIndex, func(o client.Object) []string {
		if p, ok := o.(*corev1.Pod); ok && p.Spec.NodeName != "" {
			return []string{p.Spec.NodeName}
		}
		return nil
	}); err != nil {
		return nil, fmt.Errorf("indexing barrier pods by node: %w", err)
	}
	return c, mgr.Add(managedCache{c})
}

// managedCache makes the manager start a cache along with its own (before leader election) and
// wait for it to sync.
type managedCache struct{ cache.Cache }

func (c managedCache) GetCache() cache.Cache { return c.Cache }

func trimBarrierPod(obj any) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	state, hasState := p.Annotations[contract.StartBarrierStateAnnotationKey]
	p.Annotations = nil
	if hasState {
		p.Annotations = map[string]string{contract.StartBarrierStateAnnotationKey: state}
	}
	p.ManagedFields = nil
	if ref := metav1.GetControllerOfNoCopy(p); ref != nil {
		p.OwnerReferences = []metav1.OwnerReference{*ref}
	} else {
		p.OwnerReferences = nil
	}
	spec := corev1.PodSpec{NodeName: p.Spec.NodeName}
	if sequencer.HasBarrier(&p.Spec) {
		spec.InitContainers = []corev1.Container{{Name: contract.StartBarrierContainerName}}
	}
	status := corev1.PodStatus{Phase: p.Status.Phase, InitContainerStatuses: trimInitStatuses(p.Status.InitContainerStatuses)}
	if c := unschedulable(p); c != nil {
		status.Conditions = []corev1.PodCondition{{Type: c.Type, Status: c.Status, Reason: c.Reason, Message: cut(c.Message, maxCachedMessage)}}
	}
	p.Spec, p.Status = spec, status
}
