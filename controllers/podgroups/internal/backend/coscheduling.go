package backend

import (
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	coschedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"github.com/jobset-addons/jobset-addons/pkg/addon/checks/podgroups"
)

// Coscheduling gangs pods through a scheduler-plugins coscheduling PodGroup
// (scheduling.x-k8s.io/v1alpha1), which pods name in their pod-group label: minMember,
// minResources and the Permit timeout.
type Coscheduling struct{ secondScheduler }

// Validate refuses gang names that are not valid label values (podgroups.CoschedulingLimits).
func (Coscheduling) Validate(js *jobsetv1alpha2.JobSet, s podgroups.Settings, gangs []podgroups.Gang) field.ErrorList {
	return podgroups.CoschedulingLimits(js, s, gangs)
}

func (Coscheduling) NewPodGroup() client.Object { return &coschedv1alpha1.PodGroup{} }

func (Coscheduling) Build(js *jobsetv1alpha2.JobSet, g podgroups.Gang, s podgroups.Settings, _, _ string) client.Object {
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

func (Coscheduling) Dropped(podgroups.Settings, podgroups.Gang, client.Object) Dropped {
	return Dropped{}
}

// Warnings: a Job of several pods that share its resourceclaims claims in a coscheduling gang,
// which scheduler-plugins deadlocks on (podgroups.CoschedulingWarnings).
func (Coscheduling) Warnings(js *jobsetv1alpha2.JobSet, gangs []podgroups.Gang) []string {
	return podgroups.CoschedulingWarnings(js, gangs)
}
