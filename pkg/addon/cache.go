package addon

import (
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// ManagedBy scopes a type's informer to the objects whose managed-by label is value: the
// objects an add-on created. Use it in Options.Cache for every type the add-on creates
// (PVCs, ResourceClaims, PodGroups), so that the cache holds those and not the cluster's.
func ManagedBy(value string) cache.ByObject {
	return cache.ByObject{Label: labels.SelectorFromSet(labels.Set{contract.ManagedByLabelKey: value})}
}
