package backend

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	coschedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"github.com/jobset-addons/jobset-addons/controllers/podgroups/internal/gang"
	"github.com/jobset-addons/jobset-addons/pkg/addon/jobsets"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// Coscheduling gangs pods through a scheduler-plugins coscheduling PodGroup
// (scheduling.x-k8s.io/v1alpha1), which pods name in their pod-group label: minMember,
// minResources and the Permit timeout.
type Coscheduling struct{ secondScheduler }

// Validate refuses gang names that are no label values (the last is the longest).
func (Coscheduling) Validate(js *jobsetv1alpha2.JobSet, _ gang.Settings, gangs []gang.Gang) field.ErrorList {
	if len(gangs) == 0 {
		return nil
	}
	var errs field.ErrorList
	last := gangs[len(gangs)-1].Name
	for _, msg := range validation.IsValidLabelValue(last) {
		errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), js.Name,
			fmt.Sprintf("makes the PodGroup name %q, which coscheduling needs as the value of the pod label %s: %s", last, contract.CoschedulingPodGroupLabelKey, msg)))
	}
	return errs
}

func (Coscheduling) NewPodGroup() client.Object { return &coschedv1alpha1.PodGroup{} }

func (Coscheduling) Build(js *jobsetv1alpha2.JobSet, g gang.Gang, s gang.Settings, _, _ string) client.Object {
	spec := coschedv1alpha1.PodGroupSpec{
		MinMember:              g.MinMember,
		MinResources:           g.MinResources,
		ScheduleTimeoutSeconds: s.ScheduleTimeoutSeconds,
	}
	return stamp(&coschedv1alpha1.PodGroup{Spec: spec}, js, &g, spec)
}

// Adopt: every field of the spec may change.
func (Coscheduling) Adopt(have, want client.Object) {
	AdoptMeta(have, want)
	have.(*coschedv1alpha1.PodGroup).Spec = want.(*coschedv1alpha1.PodGroup).Spec
}

func (Coscheduling) Dropped(gang.Settings, gang.Gang, client.Object) Dropped { return Dropped{} }

// Warnings: a Job of several pods that share its resourceclaims claims in a coscheduling gang.
// scheduler-plugins (v0.34.7, the first to allocate claims) deadlocks on it: the first pod's
// claim is being allocated while it waits at Permit for its gang, so its siblings cannot be
// placed, and the gang is rejected on every retry. One pod a Job, or the kubernetes backend,
// schedules it.
func (Coscheduling) Warnings(js *jobsetv1alpha2.JobSet, gangs []gang.Gang) []string {
	var out []string
	for _, g := range gangs {
		for _, rjName := range g.Stage.ReplicatedJobs {
			rj := jobsets.ReplicatedJob(js, rjName)
			if rj == nil || jobsets.PodsPerJob(rj) < 2 || len(gang.TemplateClaims(rj)) == 0 {
				continue
			}
			out = append(out, fmt.Sprintf("spec.replicatedJobs[%s]: its Jobs' %d pods share the claims of %s in the coscheduling gang %s, which scheduler-plugins' coscheduling deadlocks on (the first pod's claim is allocated while it waits for the gang, and its siblings cannot be placed): use the kubernetes scheduler, or Jobs of one pod",
				rjName, jobsets.PodsPerJob(rj), contract.TemplatesAnnotationKey, g.Name))
		}
	}
	return out
}
