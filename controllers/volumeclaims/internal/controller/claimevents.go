package controller

import (
	"maps"
	"strings"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// claimChanged passes every creation and deletion of a PVC, and of its updates those that
// change what a reconcile of its JobSet reads of it: its labels, owners and deletion, and the
// add-on's own annotations. The updates of its binding (its status, its volume, the
// PersistentVolume controller's annotations: two or three a PVC) are left out: each would
// reconcile the JobSet over all its claims for nothing, back to back for as long as the
// binding goes on (as Kubernetes' ephemeral-volume controller, which follows the pods and only
// the deletions of their claims).
func claimChanged() predicate.Predicate {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		o, n := e.ObjectOld, e.ObjectNew
		if o == nil || n == nil {
			return true
		}
		return !maps.Equal(o.GetLabels(), n.GetLabels()) ||
			!apiequality.Semantic.DeepEqual(o.GetOwnerReferences(), n.GetOwnerReferences()) ||
			!o.GetDeletionTimestamp().Equal(n.GetDeletionTimestamp()) ||
			!maps.Equal(ownAnnotations(o), ownAnnotations(n))
	}}
}

// ownAnnotations are the annotations of o under the add-on's own prefix.
func ownAnnotations(o client.Object) map[string]string {
	out := map[string]string{}
	for k, v := range o.GetAnnotations() {
		if strings.HasPrefix(k, contract.VolumeClaimsManagedByValue+"/") {
			out[k] = v
		}
	}
	return out
}
