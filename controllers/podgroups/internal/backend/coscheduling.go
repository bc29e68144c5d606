package backend

import (
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	coschedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	gang "github.com/jobset-addons/jobset-addons/pkg/addon/checks/podgroups"
)

// Coscheduling gangs pods through a scheduler-plugins coscheduling PodGroup
// (scheduling.x-k8s.io/v1alpha1), which pods name in their pod-group label: minMember,
// minResources and the Permit timeout.
type Coscheduling struct{ secondScheduler }

// Validate refuses gang names that are no label values (gang.CoschedulingLimits).
func (Coscheduling) Validate(js *jobsetv1alpha2.JobSet, s gang.Settings, gangs []gang.Gang) field.ErrorList {
	return gang.CoschedulingLimits(js, s, gangs)
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

// Warnings: a Job of several pods that share its resourceclaims claims in a coscheduling gang,
// which scheduler-plugins deadlocks on (gang.CoschedulingWarnings).
func (Coscheduling) Warnings(js *jobsetv1alpha2.JobSet, gangs []gang.Gang) []string {
	return gang.CoschedulingWarnings(js, gangs)
}
