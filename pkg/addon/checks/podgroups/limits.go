package podgroups

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/pkg/addon/jobsets"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// What each scheduler's objects cannot hold, told at JobSet paths: the body of each backend's
// Validate in the podgroups controller, here so that kubectl jobset-addons lint judges a JobSet
// as the webhook does.

// MaxGangs is how many gangs (stages) a JobSet gang-scheduled by Kubernetes may have: each is a
// PodGroup template of its one Workload, which holds at most
// schedulingv1beta1.WorkloadMaxPodGroupTemplates.
const MaxGangs = schedulingv1beta1.WorkloadMaxPodGroupTemplates

// limits are the checks of each scheduler's limits, by scheduler (the webhook asks the backend,
// whose Validate calls the same function).
var limits = map[contract.Scheduler]func(*jobsetv1alpha2.JobSet, Settings, []Gang) field.ErrorList{
	contract.SchedulerVolcano:      func(*jobsetv1alpha2.JobSet, Settings, []Gang) field.ErrorList { return nil },
	contract.SchedulerCoscheduling: CoschedulingLimits,
	contract.SchedulerKubernetes:   KubernetesLimits,
	contract.SchedulerKAI:          func(*jobsetv1alpha2.JobSet, Settings, []Gang) field.ErrorList { return nil },
}

// CoschedulingLimits refuses gang names that are no label values (the last is the longest).
func CoschedulingLimits(js *jobsetv1alpha2.JobSet, _ Settings, gangs []Gang) field.ErrorList {
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

// CoschedulingWarnings: a Job of several pods that share its resourceclaims claims in a
// coscheduling gang. scheduler-plugins (v0.34.7, the first to allocate claims) deadlocks on it:
// the first pod's claim is being allocated while it waits at Permit for its gang, so its
// siblings cannot be placed, and the gang is rejected on every retry. One pod a Job, or the
// kubernetes backend, schedules it.
func CoschedulingWarnings(js *jobsetv1alpha2.JobSet, gangs []Gang) []string {
	var out []string
	for _, g := range gangs {
		for _, rjName := range g.Stage.ReplicatedJobs {
			rj := jobsets.ReplicatedJob(js, rjName)
			if rj == nil || jobsets.PodsPerJob(rj) < 2 || len(TemplateClaims(rj)) == 0 {
				continue
			}
			out = append(out, fmt.Sprintf("spec.replicatedJobs[%s]: its Jobs' %d pods share the claims of %s in the coscheduling gang %s, which scheduler-plugins' coscheduling deadlocks on (the first pod's claim is allocated while it waits for the gang, and its siblings cannot be placed): use the kubernetes scheduler, or Jobs of one pod",
				rjName, jobsets.PodsPerJob(rj), contract.TemplatesAnnotationKey, g.Name))
		}
	}
	return out
}

// VolcanoWarnings: the ReplicatedJobs of a Volcano gang whose pods request nothing Volcano counts
// (no CPU, memory or extended resource, requests or limits). Volcano (v1.10.0 and v1.14.1 read:
// JobInfo.IsReady, CheckTaskReady) counts a pending pod of empty request as placed, for
// minMember and minTaskMember alike, and places it apart from the gang (its backfill action):
// such a pod that fits no node does not hold the rest of the gang back.
func VolcanoWarnings(js *jobsetv1alpha2.JobSet, gangs []Gang) []string {
	var out []string
	for _, g := range gangs {
		for _, rjName := range g.Stage.ReplicatedJobs {
			rj := jobsets.ReplicatedJob(js, rjName)
			if rj == nil || jobsets.PodsPerJob(rj) == 0 || requestsSome(&rj.Template.Spec.Template.Spec) {
				continue
			}
			out = append(out, fmt.Sprintf("spec.replicatedJobs[%s]: its pods request no CPU, memory or other resource, and Volcano counts such a pod as placed before it is: the rest of gang %s may start while they wait (for a node their selector, affinity or tolerations allow), and they start apart from it; give their containers a CPU or memory request",
				rjName, g.Name))
		}
	}
	return out
}

// requestsSome tells whether a pod of spec requests (or, without a request, limits) a resource
// Volcano counts: anything but ephemeral storage.
func requestsSome(spec *corev1.PodSpec) bool {
	some := func(l corev1.ResourceList) bool {
		for name, q := range l {
			if name != corev1.ResourceEphemeralStorage && !q.IsZero() {
				return true
			}
		}
		return false
	}
	for _, cs := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
		for _, c := range cs {
			if some(c.Resources.Requests) || some(c.Resources.Limits) {
				return true
			}
		}
	}
	return some(spec.Overhead)
}

// KubernetesLimits refuses what a composite gang cannot be made of, and more gangs than a
// Workload holds templates.
func KubernetesLimits(js *jobsetv1alpha2.JobSet, s Settings, gangs []Gang) field.ErrorList {
	if s.Composite {
		if errs := compositeErrors(js, gangs); len(errs) > 0 {
			return errs
		}
	}
	if len(gangs) > MaxGangs {
		return field.ErrorList{field.Invalid(field.NewPath("spec", "replicatedJobs"), len(gangs),
			fmt.Sprintf("makes %d stages, each a PodGroup template of the JobSet's one Workload, and a Workload holds at most %d (WorkloadMaxPodGroupTemplates of scheduling.k8s.io/v1beta1): "+
				"put ReplicatedJobs that may start together in one stage, or use scheduler %q", len(gangs), MaxGangs, contract.SchedulerVolcano))}
	}
	return nil
}

// compositeErrors refuses what a composite gang cannot be made of yet: several stages (one
// CompositePodGroup per stage is not built), more ReplicatedJobs than a CompositePodGroup
// template holds PodGroup templates (8), and Job names that are no object names.
func compositeErrors(js *jobsetv1alpha2.JobSet, gangs []Gang) field.ErrorList {
	path := contract.JobSetAnnotationPath(contract.CompositeAnnotationKey)
	if len(gangs) > 1 {
		return field.ErrorList{field.Forbidden(path, fmt.Sprintf("a composite gang is made for a JobSet of one stage, and this one is sequenced into %d: drop one of the two", len(gangs)))}
	}
	if n := len(js.Spec.ReplicatedJobs); n > MaxGangs {
		return field.ErrorList{field.Forbidden(path, fmt.Sprintf("a composite gang holds one PodGroup template per ReplicatedJob, at most %d, and this JobSet has %d", MaxGangs, n))}
	}
	var errs field.ErrorList
	for i, rj := range js.Spec.ReplicatedJobs {
		if _, err := contract.JobPodGroupName(jobsets.JobName(js.Name, rj.Name, max(rj.Replicas-1, 0))); err != nil {
			errs = append(errs, field.Invalid(field.NewPath("spec", "replicatedJobs").Index(i).Child("name"), rj.Name, err.Error()))
		}
	}
	return errs
}
