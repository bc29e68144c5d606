package backend

import (
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/util/validation/field"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	gang "github.com/jobset-addons/jobset-addons/pkg/addon/checks/podgroups"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// ForeignGangs refuses a JobSet being created whose pod templates already name a gang that
// podgroups would not name there, for any of the backends: the coscheduling pod-group label,
// Volcano's group-name annotation or spec.schedulingGroup.podGroupName, set by whoever made the
// JobSet. Someone else then makes (or expects) that gang's PodGroup, and podgroups would make a
// second one for the same pods. The case this is for is Kubeflow Trainer: a TrainJob whose
// runtime has spec.podGroupPolicy makes its own PodGroup (named after the TrainJob) and labels
// the JobSet's pod templates for it; if the runtime's JobSet template also asks podgroups for a
// gang, the JobSet is refused, and Trainer reports the refusal as the TrainJob's Warning event
// TrainJobResourcesCreationFailed. A name podgroups itself would inject (a JobSet re-created from
// an export of one it admitted) is accepted, except in a JobSet a TrainJob controls.
func ForeignGangs(backends []Backend, js *jobsetv1alpha2.JobSet, s gang.Settings, gangs []gang.Gang) field.ErrorList {
	owner := gang.TrainJobOwner(js)
	var errs field.ErrorList
	for _, g := range gangs {
		for _, rjName := range g.Stage.ReplicatedJobs {
			i := slices.IndexFunc(js.Spec.ReplicatedJobs, func(rj jobsetv1alpha2.ReplicatedJob) bool { return rj.Name == rjName })
			if i < 0 {
				continue
			}
			pt := &js.Spec.ReplicatedJobs[i].Template.Spec.Template
			base := field.NewPath("spec", "replicatedJobs").Index(i).Child("template", "spec", "template")
			for _, b := range backends {
				value, ok := b.GangOf(pt)
				if !ok || (owner == "" && s.Scheduler == b.Scheduler() && value == g.Name) {
					continue
				}
				errs = append(errs, field.Forbidden(b.GangPath(base), foreignMessage(s, g, value, owner)))
			}
		}
	}
	return errs
}

func foreignMessage(s gang.Settings, g gang.Gang, value, owner string) string {
	if owner != "" {
		return fmt.Sprintf("names the gang %q, set by Kubeflow Trainer for TrainJob %q: its runtime's spec.podGroupPolicy makes a PodGroup of its own, "+
			"and this JobSet's %s=%s asks podgroups to make %q for the same pods; one gang must have one maker: "+
			"remove spec.podGroupPolicy from the TrainingRuntime (podgroups then makes the gang, one per stage) or the podgroups annotations from its JobSet template",
			value, owner, contract.SchedulerAnnotationKey, s.Scheduler, g.Name)
	}
	return fmt.Sprintf("names the gang %q, which podgroups did not name: whoever set it makes (or expects) that PodGroup, "+
		"and %s=%s asks podgroups to make %q for these pods too; one gang must have one maker: remove one of the two",
		value, contract.SchedulerAnnotationKey, s.Scheduler, g.Name)
}
