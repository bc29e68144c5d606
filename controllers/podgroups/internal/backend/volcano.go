package backend

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	volcanov1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	gang "github.com/jobset-addons/jobset-addons/pkg/addon/checks/podgroups"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// Volcano gangs pods through a Volcano PodGroup (scheduling.volcano.sh/v1beta1), which pods name
// in their group-name annotation: minMember, minResources, queue, priority class and network
// topology.
type Volcano struct{ secondScheduler }

// Inject sets the group-name annotation and, when the settings name one, the queue.
func (v Volcano) Inject(rj *jobsetv1alpha2.ReplicatedJob, g gang.Gang, s gang.Settings) {
	v.secondScheduler.Inject(rj, g, s)
	if pt := &rj.Template.Spec.Template; s.Queue != "" {
		pt.Annotations = with(pt.Annotations, contract.VolcanoQueueNameAnnotationKey, s.Queue)
	}
}

func (Volcano) Validate(*jobsetv1alpha2.JobSet, gang.Settings, []gang.Gang) field.ErrorList {
	return nil
}

func (Volcano) NewPodGroup() client.Object { return &volcanov1beta1.PodGroup{} }

// Build: the queue is the settings' or else defaultQueue.
func (Volcano) Build(js *jobsetv1alpha2.JobSet, g gang.Gang, s gang.Settings, priorityClass, defaultQueue string) client.Object {
	spec := volcanov1beta1.PodGroupSpec{
		MinMember:         g.MinMember,
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
func (Volcano) Dropped(s gang.Settings, _ gang.Gang, got client.Object) Dropped {
	if s.NetworkTopology == nil || got.(*volcanov1beta1.PodGroup).Spec.NetworkTopology != nil {
		return Dropped{}
	}
	return Dropped{Topology: fmt.Sprintf("The Volcano PodGroup CRD installed has no spec.networkTopology and dropped it from PodGroup %s: upgrade Volcano's CRDs for network-topology-aware scheduling", got.GetName())}
}
