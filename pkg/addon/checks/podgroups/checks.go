package podgroups

import (
	"k8s.io/apimachinery/pkg/util/validation/field"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// ValidateCreate is every problem of a new JobSet's gang settings that needs no cluster, as
// the podgroups webhook tells it: the annotations (Parse), the gangs (Gangs), and what the
// chosen scheduler's objects cannot hold (CoschedulingLimits, KubernetesLimits). The webhook
// adds what depends on the cluster and the controller's configuration: a scheduler whose
// PodGroup CRD or Workload API is not served, a composite gang without CompositePodGroup, pod
// templates naming another scheduler, a PodGroup's claims the apiserver drops, and its dry
// runs. Its mutating webhook refuses a gang podgroups did not name (ForeignGangs).
func ValidateCreate(js *jobsetv1alpha2.JobSet) field.ErrorList {
	if !Uses(js) {
		return nil
	}
	s, gangs, read := Read(js)
	limit, known := limits[s.Scheduler]
	if !known {
		return read.Settings
	}
	errs := read.All()
	if len(read.Gangs) == 0 {
		errs = append(errs, limit(js, s, gangs)...)
	}
	return errs
}

// Warnings are the Warnings the podgroups webhook gives a JobSet ValidateCreate accepts that
// need no cluster: claims shared by the pods of a Job in a coscheduling gang
// (CoschedulingWarnings), pods of a Volcano gang that request nothing (VolcanoWarnings). A
// gang whose pod templates have different priority classes is warned of by the webhook, which
// reads the classes' values.
func Warnings(js *jobsetv1alpha2.JobSet) []string {
	if !Uses(js) {
		return nil
	}
	s, gangs, read := Read(js)
	if len(read.All()) > 0 {
		return nil
	}
	switch s.Scheduler {
	case contract.SchedulerCoscheduling:
		return CoschedulingWarnings(js, gangs)
	case contract.SchedulerVolcano:
		return VolcanoWarnings(js, gangs)
	}
	return nil
}
