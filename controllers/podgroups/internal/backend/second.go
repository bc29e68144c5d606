package backend

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/pkg/addon/checks/podgroups"
)

// secondScheduler is what the backends of a second scheduler (Volcano, Coscheduling, KAI) share: its
// schedulerName, a PodGroup CRD of minMember and minResources whose spec may change whole, and
// pods that name their gang in a pod-template label or annotation.
type secondScheduler struct {
	// KeyGang is where its pods name their gang.
	podgroups.KeyGang
	// kind is its PodGroup's.
	kind schema.GroupVersionKind
	// name is the scheduler's schedulerName.
	name string
}

func (s secondScheduler) Kind() schema.GroupVersionKind { return s.kind }

func (s secondScheduler) SchedulerName() string { return s.name }

func (secondScheduler) NotServed() string {
	return "this cluster's podgroups controller found no PodGroup CRD for this scheduler when it started: install the scheduler's CRDs and restart the controller, or pick another scheduler"
}

// Inject sets the gang's key.
func (s secondScheduler) Inject(rj *jobsetv1alpha2.ReplicatedJob, g podgroups.Gang, _ podgroups.Settings) {
	m := s.Map(&rj.Template.Spec.Template)
	*m = with(*m, s.Key, g.Name)
}

func (secondScheduler) NeedsReplace(_, _ client.Object) bool { return false }

func (secondScheduler) Demand(g podgroups.Gang) string {
	return fmt.Sprintf("minMember %d, minResources %s", g.MinMember, describe(g.MinResources))
}
