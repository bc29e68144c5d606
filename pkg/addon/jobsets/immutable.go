package jobsets

import (
	"k8s.io/apimachinery/pkg/util/validation/field"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// immutable is the message of a field error refusing a change to an annotation an add-on reads
// only when the JobSet is created.
const immutable = "is immutable"

// AnnotationChanged tells whether an update added, removed or changed the annotation key
// (old and new are the annotations before and after it).
func AnnotationChanged(old, new map[string]string, key string) bool {
	oldValue, oldOK := old[key]
	newValue, newOK := new[key]
	return oldOK != newOK || oldValue != newValue
}

// ImmutableAnnotations refuses an update of a JobSet that added, removed or changed any of keys
// in its annotations: one Forbidden error per key, at the annotation's path.
func ImmutableAnnotations(oldJS, newJS *jobsetv1alpha2.JobSet, keys ...string) field.ErrorList {
	var errs field.ErrorList
	for _, key := range keys {
		if AnnotationChanged(oldJS.Annotations, newJS.Annotations, key) {
			errs = append(errs, field.Forbidden(contract.JobSetAnnotationPath(key), immutable))
		}
	}
	return errs
}

// ImmutableReplicatedJobAnnotations refuses an update of a JobSet that added, removed or changed
// any of keys in the annotations of a ReplicatedJob's Job template: one Forbidden error per
// ReplicatedJob and key, at the annotation's path. A ReplicatedJob is matched to the old one of
// its name; a ReplicatedJob the old JobSet did not have counts as having had no annotations.
func ImmutableReplicatedJobAnnotations(oldJS, newJS *jobsetv1alpha2.JobSet, keys ...string) field.ErrorList {
	var errs field.ErrorList
	for i, rj := range newJS.Spec.ReplicatedJobs {
		var old map[string]string
		if o := ReplicatedJob(oldJS, rj.Name); o != nil {
			old = o.Template.Annotations
		}
		for _, key := range keys {
			if AnnotationChanged(old, rj.Template.Annotations, key) {
				errs = append(errs, field.Forbidden(contract.ReplicatedJobAnnotationPath(i, key), immutable))
			}
		}
	}
	return errs
}
