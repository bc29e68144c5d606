package podgroups

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// GangNamer is where the pods of one scheduler name their gang in a pod template.
type GangNamer interface {
	Scheduler() contract.Scheduler
	// GangOf is the gang a pod template names for this scheduler, and whether it names one.
	GangOf(pt *corev1.PodTemplateSpec) (string, bool)
	// GangPath is where GangOf reads, below the pod template at template.
	GangPath(template *field.Path) *field.Path
}

// KeyGang is a scheduler whose pods name their gang in a pod-template label (InLabels) or
// annotation, Key: Coscheduling and Volcano.
type KeyGang struct {
	Of       contract.Scheduler
	Key      string
	InLabels bool
}

// SchedulingGroupGang is the kubernetes scheduler's: pods name their gang in
// spec.schedulingGroup.podGroupName.
type SchedulingGroupGang struct{}

var (
	// CoschedulingGang is where Coscheduling's pods name their gang.
	CoschedulingGang = KeyGang{Of: contract.SchedulerCoscheduling, Key: contract.CoschedulingPodGroupLabelKey, InLabels: true}
	// VolcanoGang is where Volcano's pods name their gang.
	VolcanoGang = KeyGang{Of: contract.SchedulerVolcano, Key: contract.VolcanoGroupNameAnnotationKey}
	// KAIGang is where KAI Scheduler's pods name their gang.
	KAIGang = KeyGang{Of: contract.SchedulerKAI, Key: contract.KAIPodGroupAnnotationKey}
)

// GangNamers are every scheduler's, in a fixed order.
func GangNamers() []GangNamer {
	return []GangNamer{CoschedulingGang, VolcanoGang, SchedulingGroupGang{}, KAIGang}
}

func (k KeyGang) Scheduler() contract.Scheduler { return k.Of }

func (k KeyGang) GangOf(pt *corev1.PodTemplateSpec) (string, bool) {
	name, ok := (*k.Map(pt))[k.Key]
	return name, ok
}

func (k KeyGang) GangPath(template *field.Path) *field.Path {
	if k.InLabels {
		return template.Child("metadata", "labels").Key(k.Key)
	}
	return template.Child("metadata", "annotations").Key(k.Key)
}

// Map is the map of pt that holds Key.
func (k KeyGang) Map(pt *corev1.PodTemplateSpec) *map[string]string {
	if k.InLabels {
		return &pt.Labels
	}
	return &pt.Annotations
}

func (SchedulingGroupGang) Scheduler() contract.Scheduler { return contract.SchedulerKubernetes }

func (SchedulingGroupGang) GangOf(pt *corev1.PodTemplateSpec) (string, bool) {
	if sg := pt.Spec.SchedulingGroup; sg != nil && sg.PodGroupName != nil {
		return *sg.PodGroupName, true
	}
	return "", false
}

func (SchedulingGroupGang) GangPath(template *field.Path) *field.Path {
	return template.Child("spec", "schedulingGroup", "podGroupName")
}

// ForeignGangs refuses a JobSet being created whose pod templates already name a gang that
// podgroups would not name there, in any scheduler's place (GangNamers): the coscheduling
// pod-group label, Volcano's group-name annotation or spec.schedulingGroup.podGroupName, set by
// whoever made the JobSet. Someone else then makes (or expects) that gang's PodGroup, and
// podgroups would make a second one for the same pods. The case this is for is Kubeflow
// Trainer: a TrainJob whose runtime has spec.podGroupPolicy makes its own PodGroup (named after
// the TrainJob) and labels the JobSet's pod templates for it; if the runtime's JobSet template
// also asks podgroups for a gang, the JobSet is refused, and Trainer reports the refusal as the
// TrainJob's Warning event TrainJobResourcesCreationFailed. A name podgroups itself would inject
// (a JobSet re-created from an export of one it admitted) is accepted, except in a JobSet a
// TrainJob controls. The mutating webhook runs it before it names anything; lint runs it too.
func ForeignGangs(js *jobsetv1alpha2.JobSet, s Settings, gangs []Gang) field.ErrorList {
	owner := TrainJobOwner(js)
	var errs field.ErrorList
	for _, g := range gangs {
		for _, rjName := range g.Stage.ReplicatedJobs {
			i := slices.IndexFunc(js.Spec.ReplicatedJobs, func(rj jobsetv1alpha2.ReplicatedJob) bool { return rj.Name == rjName })
			if i < 0 {
				continue
			}
			pt := &js.Spec.ReplicatedJobs[i].Template.Spec.Template
			base := field.NewPath("spec", "replicatedJobs").Index(i).Child("template", "spec", "template")
			for _, n := range GangNamers() {
				value, ok := n.GangOf(pt)
				if !ok || (owner == "" && s.Scheduler == n.Scheduler() && value == g.Name) {
					continue
				}
				errs = append(errs, field.Forbidden(n.GangPath(base), foreignMessage(s, g, value, owner)))
			}
		}
	}
	return errs
}

func foreignMessage(s Settings, g Gang, value, owner string) string {
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
