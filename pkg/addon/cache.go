package addon

import (
	"maps"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// ManagedBy scopes a type's informer to the objects whose managed-by label is value: the
// objects an add-on created. Use it in Options.Cache for every type the add-on creates
// (PVCs, ResourceClaims, PodGroups), so that the cache holds those and not the cluster's.
func ManagedBy(value string) cache.ByObject {
	return cache.ByObject{Label: labels.SelectorFromSet(labels.Set{contract.ManagedByLabelKey: value})}
}

// JobsOfJobSets scopes the Job informer to the Jobs of JobSets (those with the jobset-name
// label) and keeps all of each Job but its pod template, of which it keeps only what kept
// returns (the part the add-on reads; nil keeps nothing). A Job's pod template is most of it,
// and the Jobs of every JobSet are cached, including those of JobSets that do not use the
// add-on (make bench ADDON=scale). Of a Job's annotations, only the add-ons' own (those in the
// contract's domain) are kept: the rest are JobSet's copies of its labels, which are kept.
func JobsOfJobSets(kept func(*batchv1.Job) corev1.PodTemplateSpec) cache.ByObject {
	exists, err := labels.NewRequirement(contract.JobSetNameLabelKey, selection.Exists, nil)
	if err != nil {
		panic(err)
	}
	return Trimmed(cache.ByObject{Label: labels.NewSelector().Add(*exists)}, func(obj any) {
		if job, ok := obj.(*batchv1.Job); ok {
			var keep corev1.PodTemplateSpec
			if kept != nil {
				keep = kept(job)
			}
			job.Spec.Template = keep
			maps.DeleteFunc(job.Annotations, func(key, _ string) bool { return !strings.Contains(key, contract.Domain+"/") })
		}
	})
}

// JobSetsUsing keeps, of a JobSet that does not use the add-on (uses is false), only its
// metadata: every JobSet is cached, and the apiserver cannot select on the annotations that say
// which add-ons one uses. uses must be false again on what is kept (it reads the metadata, or the
// spec that is dropped), so that a reconcile of a kept JobSet does what it would on the whole one:
// nothing. A JobSet changed to use the add-on is cached whole from that change on.
//
// A JobSet managed elsewhere (contract.ManagedElsewhere) is not this cluster's to act on: of it,
// only its metadata without the add-ons' own annotations (of the contract's domain) and its
// spec.managedBy are kept (NotHere), so that no add-on's uses takes it for one that uses it,
// and no reconcile, watch or predicate of any add-on acts on it.
func JobSetsUsing(uses func(*jobsetv1alpha2.JobSet) bool) cache.ByObject {
	return jobSetsUsing(uses, nil)
}

// jobSetsUsing is JobSetsUsing, calling elsewhere (if not nil) with each JobSet managed
// elsewhere that uses the add-on, whole, before it is trimmed.
func jobSetsUsing(uses func(*jobsetv1alpha2.JobSet) bool, elsewhere func(*jobsetv1alpha2.JobSet)) cache.ByObject {
	return Trimmed(cache.ByObject{}, func(obj any) {
		js, ok := obj.(*jobsetv1alpha2.JobSet)
		switch {
		case !ok:
		case contract.ManagedElsewhere(js.Spec.ManagedBy):
			if elsewhere != nil && uses(js) {
				elsewhere(js)
			}
			NotHere(js)
		case !uses(js):
			js.Spec, js.Status = jobsetv1alpha2.JobSetSpec{}, jobsetv1alpha2.JobSetStatus{}
		}
	})
}

// NotHere trims, in place, a JobSet managed elsewhere to what an add-on may know of it: its
// metadata without the add-ons' annotations, and its spec.managedBy.
func NotHere(js *jobsetv1alpha2.JobSet) {
	js.Spec, js.Status = jobsetv1alpha2.JobSetSpec{ManagedBy: js.Spec.ManagedBy}, jobsetv1alpha2.JobSetStatus{}
	maps.DeleteFunc(js.Annotations, func(key, _ string) bool { return strings.Contains(key, contract.Domain+"/") })
}

// Trimmed is by with a transform that drops the objects' managed fields, as the manager's
// default transform (which a transform of one kind replaces), then trims each object, in place,
// to what the add-on reads of it. The cache then holds what trim left; a write the add-on makes
// from a cached object must therefore be a patch of what it changes, never an update.
func Trimmed(by cache.ByObject, trim func(obj any)) cache.ByObject {
	strip := cache.TransformStripManagedFields()
	by.Transform = func(obj any) (any, error) {
		obj, err := strip(obj)
		if err == nil {
			trim(obj)
		}
		return obj, err
	}
	return by
}
