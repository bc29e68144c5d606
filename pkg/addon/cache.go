package addon

import (
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// ManagedBy scopes a type's informer to the objects whose managed-by label is value: the
// objects an add-on created. Use it in Options.Cache for every type the add-on creates
// (PVCs, ResourceClaims, PodGroups), so that the cache holds those and not the cluster's.
func ManagedBy(value string) cache.ByObject {
	return cache.ByObject{Label: labels.SelectorFromSet(labels.Set{contract.ManagedByLabelKey: value})}
}

// JobsOfJobSets scopes the Job informer to the Jobs of JobSets (those with the jobset-name
// label), and keeps, of each, all but its pod template: of that, only what kept (nil: nothing)
// returns, the part the add-on reads. A Job's pod template is most of it, and every JobSet's
// Jobs are cached, those of the JobSets that do not use the add-on too (make bench-scale).
func JobsOfJobSets(kept func(*batchv1.Job) corev1.PodTemplateSpec) cache.ByObject {
	exists, err := labels.NewRequirement(contract.JobSetNameLabelKey, selection.Exists, nil)
	if err != nil {
		panic(err)
	}
	return cache.ByObject{Label: labels.NewSelector().Add(*exists), Transform: jobTransform(kept)}
}

// jobTransform strips a Job's managed fields (as the manager's default transform, which a
// transform of one kind replaces) and its pod template but for what kept returns.
func jobTransform(kept func(*batchv1.Job) corev1.PodTemplateSpec) toolscache.TransformFunc {
	strip := cache.TransformStripManagedFields()
	return func(obj any) (any, error) {
		obj, err := strip(obj)
		if err != nil {
			return obj, err
		}
		if job, ok := obj.(*batchv1.Job); ok {
			var keep corev1.PodTemplateSpec
			if kept != nil {
				keep = kept(job)
			}
			job.Spec.Template = keep
		}
		return obj, nil
	}
}
