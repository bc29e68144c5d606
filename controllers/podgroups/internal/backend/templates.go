package backend

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/pkg/addon/checks/podgroups"
	"github.com/jobset-addons/jobset-addons/pkg/addon/jobsets"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// Inject names each gang in the pod templates of its ReplicatedJobs (Backend.Inject), and on
// their Jobs (contract.GangAnnotationKey, for the Job webhook), and sets the backend's
// schedulerName where it is empty. It is idempotent.
func Inject(b Backend, js *jobsetv1alpha2.JobSet, s podgroups.Settings, gangs []podgroups.Gang) {
	for _, g := range gangs {
		for _, rjName := range g.Stage.ReplicatedJobs {
			rj := jobsets.ReplicatedJob(js, rjName)
			b.Inject(rj, g, s)
			rj.Template.Annotations = with(rj.Template.Annotations, contract.GangAnnotationKey, g.Name)
			if pt := &rj.Template.Spec.Template; pt.Spec.SchedulerName == "" {
				pt.Spec.SchedulerName = b.SchedulerName()
			}
		}
	}
}

// Admitted tells whether every pod template names its gang, that is, whether the mutating
// webhook ran when the JobSet was created.
func Admitted(b Backend, js *jobsetv1alpha2.JobSet, gangs []podgroups.Gang) bool {
	for _, g := range gangs {
		for _, rjName := range g.Stage.ReplicatedJobs {
			if got, _ := b.GangOf(&jobsets.ReplicatedJob(js, rjName).Template.Spec.Template); got != g.Name {
				return false
			}
		}
	}
	return true
}

// SchedulerNameErrors refuses pod templates whose schedulerName is some scheduler other than
// the backend's (Backend.SchedulerName; "" takes any).
func SchedulerNameErrors(b Backend, js *jobsetv1alpha2.JobSet) field.ErrorList {
	want := b.SchedulerName()
	if want == "" {
		return nil
	}
	var errs field.ErrorList
	for i, rj := range js.Spec.ReplicatedJobs {
		if got := rj.Template.Spec.Template.Spec.SchedulerName; got != "" && got != want {
			errs = append(errs, field.Invalid(
				field.NewPath("spec", "replicatedJobs").Index(i).Child("template", "spec", "template", "spec", "schedulerName"),
				got, fmt.Sprintf("must be empty or %q: %s=%s gangs this JobSet's pods with %q", want, contract.SchedulerAnnotationKey, b.Scheduler(), want)))
		}
	}
	return errs
}

// with is m with k set to v (m made if nil).
func with(m map[string]string, k, v string) map[string]string {
	if m == nil {
		m = map[string]string{}
	}
	m[k] = v
	return m
}
