package webhook

import (
	"k8s.io/apimachinery/pkg/util/validation/field"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/pkg/addon/checks/sequencer"
	"github.com/jobset-addons/jobset-addons/pkg/addon/jobsets"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// podTemplateRecordsChanged refuses an UPDATE that adds, changes or removes the barrier-state
// annotation of a pod template (JobSet lets a suspended JobSet's pod templates change): the
// sequencer writes it on each pod when its barrier opens, and a pod created from a template
// that carries it would start its main containers without waiting. A CREATE that sets it is
// refused by sequencer.ValidateBarrier.
func podTemplateRecordsChanged(oldJS, newJS *jobsetv1alpha2.JobSet) field.ErrorList {
	var errs field.ErrorList
	for i, rj := range newJS.Spec.ReplicatedJobs {
		var old map[string]string
		if o := sequencer.ReplicatedJob(oldJS, rj.Name); o != nil {
			old = o.Template.Spec.Template.Annotations
		}
		if jobsets.AnnotationChanged(old, rj.Template.Spec.Template.Annotations, contract.StartBarrierStateAnnotationKey) {
			errs = append(errs, field.Forbidden(field.NewPath("spec", "replicatedJobs").Index(i).Child("template", "spec", "template", "metadata", "annotations").Key(contract.StartBarrierStateAnnotationKey),
				"is written by the sequencer controller on each pod, never in a pod template"))
		}
	}
	return errs
}
