package backend

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	gang "github.com/jobset-addons/jobset-addons/pkg/addon/checks/podgroups"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// secondScheduler is what the backends of a second scheduler (Volcano, Coscheduling) share: its
// schedulerName, a PodGroup CRD of minMember and minResources whose spec may change whole, and
// pods that name their gang in a pod-template label or annotation.
type secondScheduler struct {
	scheduler contract.Scheduler
	// kind is its PodGroup's.
	kind schema.GroupVersionKind
	// name is the scheduler's schedulerName.
	name string
	// gangKey is the pod-template annotation, or label when inLabels, that names the gang.
	gangKey  string
	inLabels bool
}

func (s secondScheduler) Scheduler() contract.Scheduler { return s.scheduler }

func (s secondScheduler) Kind() schema.GroupVersionKind { return s.kind }

func (s secondScheduler) SchedulerName() string { return s.name }

func (secondScheduler) NotServed() string {
	return "this cluster's podgroups controller found no PodGroup CRD for this scheduler when it started: install the scheduler's CRDs and restart the controller, or pick another scheduler"
}

// Inject sets gangKey.
func (s secondScheduler) Inject(rj *jobsetv1alpha2.ReplicatedJob, g gang.Gang, _ gang.Settings) {
	m := s.gangMap(&rj.Template.Spec.Template)
	*m = with(*m, s.gangKey, g.Name)
}

func (s secondScheduler) GangOf(pt *corev1.PodTemplateSpec) (string, bool) {
	name, ok := (*s.gangMap(pt))[s.gangKey]
	return name, ok
}

func (s secondScheduler) GangPath(template *field.Path) *field.Path {
	if s.inLabels {
		return template.Child("metadata", "labels").Key(s.gangKey)
	}
	return template.Child("metadata", "annotations").Key(s.gangKey)
}

// gangMap is the map of pt that holds gangKey.
func (s secondScheduler) gangMap(pt *corev1.PodTemplateSpec) *map[string]string {
	if s.inLabels {
		return &pt.Labels
	}
	return &pt.Annotations
}

func (secondScheduler) NeedsReplace(_, _ client.Object) bool { return false }

func (secondScheduler) Demand(g gang.Gang) string {
	return fmt.Sprintf("minMember %d, minResources %s", g.MinMember, describe(g.MinResources))
}
