package backend

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	volcanov1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/jobset-addons/jobset-addons/pkg/addon/checks/podgroups"
	"github.com/jobset-addons/jobset-addons/pkg/addon/jobsets"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// Volcano gangs pods through a Volcano PodGroup (scheduling.volcano.sh/v1beta1), which pods name
// in their group-name annotation: minMember, minTaskMember (per task, which pods name in their
// task-spec annotation), minResources, queue, priority class and network topology.
type Volcano struct{ secondScheduler }

// Inject sets the group-name annotation, the task-spec annotation where the template has none
// (the ReplicatedJob's name) and, when the settings name one, the queue.
func (v Volcano) Inject(rj *jobsetv1alpha2.ReplicatedJob, g podgroups.Gang, s podgroups.Settings) {
	v.secondScheduler.Inject(rj, g, s)
	pt := &rj.Template.Spec.Template
	if pt.Annotations[contract.VolcanoTaskSpecAnnotationKey] == "" {
		pt.Annotations = with(pt.Annotations, contract.VolcanoTaskSpecAnnotationKey, rj.Name)
	}
	if s.Queue != "" {
		pt.Annotations = with(pt.Annotations, contract.VolcanoQueueNameAnnotationKey, s.Queue)
	}
}

// minTaskMember is, per task the gang's pod templates name (their task-spec annotation), how
// many pods of it run at once: Volcano then places the gang only with all of each task, not
// just as many pods as minMember. A template without the annotation (a JobSet admitted before
// podgroups wrote it) adds no task: Volcano would count its pods in none and never place them.
func minTaskMember(js *jobsetv1alpha2.JobSet, g podgroups.Gang) map[string]int32 {
	var out map[string]int32
	for _, rjName := range g.Stage.ReplicatedJobs {
		rj := jobsets.ReplicatedJob(js, rjName)
		task := rj.Template.Spec.Template.Annotations[contract.VolcanoTaskSpecAnnotationKey]
		if task == "" {
			continue
		}
		if out == nil {
			out = map[string]int32{}
		}
		out[task] += podgroups.PodsPerJob(rj) * rj.Replicas
	}
	return out
}

// Warnings: pods of a gang that request nothing, which Volcano counts as placed before they are
// (podgroups.VolcanoWarnings).
func (Volcano) Warnings(js *jobsetv1alpha2.JobSet, gangs []podgroups.Gang) []string {
	return podgroups.VolcanoWarnings(js, gangs)
}

func (Volcano) Validate(*jobsetv1alpha2.JobSet, podgroups.Settings, []podgroups.Gang) field.ErrorList {
	return nil
}

func (Volcano) NewPodGroup() client.Object { return &volcanov1beta1.PodGroup{} }

// Build: the queue is the settings' or else defaultQueue.
func (Volcano) Build(js *jobsetv1alpha2.JobSet, g podgroups.Gang, s podgroups.Settings, priorityClass, defaultQueue string) client.Object {
	spec := volcanov1beta1.PodGroupSpec{
		MinMember:         g.MinMember,
		MinTaskMember:     minTaskMember(js, g),
		Queue:             s.Queue,
		PriorityClassName: priorityClass,
		MinResources:      ptr.To(g.MinResources),
	}
	if spec.Queue == "" {
		spec.Queue = defaultQueue
	}
	if nt := s.NetworkTopology; nt != nil {
		spec.NetworkTopology = &volcanov1beta1.NetworkTopologySpec{
			Mode:               volcanov1beta1.NetworkTopologyMode(nt.Mode),
			HighestTierAllowed: nt.HighestTierAllowed,
		}
	}
	return stamp(&volcanov1beta1.PodGroup{Spec: spec}, js, &g, spec)
}

// Adopt: every field of the spec may change.
func (Volcano) Adopt(have, want client.Object) {
	AdoptMeta(have, want)
	have.(*volcanov1beta1.PodGroup).Spec = want.(*volcanov1beta1.PodGroup).Spec
}

// Dropped: a Volcano CRD from before network topology support prunes spec.networkTopology.
func (Volcano) Dropped(s podgroups.Settings, _ podgroups.Gang, got client.Object) Dropped {
	if s.NetworkTopology == nil || got.(*volcanov1beta1.PodGroup).Spec.NetworkTopology != nil {
		return Dropped{}
	}
	return Dropped{Topology: fmt.Sprintf("The Volcano PodGroup CRD installed has no spec.networkTopology and dropped it from PodGroup %s: upgrade Volcano's CRDs for network-topology-aware scheduling", got.GetName())}
}
