package jobsets

import (
	"fmt"

	resourcev1 "k8s.io/api/resource/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/utils/ptr"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// MaxClaimSharers is how many pods one ResourceClaim reserved per pod serves at once: a claim's
// status.reservedFor holds at most resourcev1.ResourceClaimReservedForMaxSize entries.
const MaxClaimSharers = resourcev1.ResourceClaimReservedForMaxSize

// MaxPodGroupClaims is how many claims one PodGroup (scheduling.k8s.io/v1beta1) lists.
const MaxPodGroupClaims = schedulingv1beta1.MaxPodGroupResourceClaims

// JobName is the name JobSet gives the Job of index i of a ReplicatedJob: <jobset>-<rj>-<i>.
func JobName(jobSet, replicatedJob string, index int32) string {
	return fmt.Sprintf("%s-%s-%d", jobSet, replicatedJob, index)
}

// PodsPerJob is how many pods of one Job of the ReplicatedJob run at once: min(parallelism,
// completions), parallelism 1 when unset, completions unset meaning parallelism.
func PodsPerJob(rj *jobsetv1alpha2.ReplicatedJob) int32 {
	spec := rj.Template.Spec
	p := ptr.Deref(spec.Parallelism, 1)
	if spec.Completions != nil && *spec.Completions < p {
		return *spec.Completions
	}
	return p
}

// ClaimsOnPodGroup tells whether the per-Job claims (resourceclaims' templates, templates of
// them) of the JobSet's ReplicatedJob rj go on its Job's PodGroup, where kube-scheduler reserves
// each for the PodGroup rather than for each pod (feature gate DRAWorkloadResourceClaims), so
// that more than MaxClaimSharers pods may share one. That is so when the JobSet asks podgroups
// for scheduler kubernetes, and either gangs each Job as a PodGroup of its own
// (contract.CompositeAnnotationKey) or rj has one Job (replicas 1) and is alone in its stage, so
// that the stage's PodGroup gangs that Job's pods and no other's; and rj has at most
// MaxPodGroupClaims templates. podgroups then writes the claims into that PodGroup; resourceclaims lets such a Job
// have more than MaxClaimSharers pods (podgroups refuses it where the apiserver drops a
// PodGroup's claims).
func ClaimsOnPodGroup(js *jobsetv1alpha2.JobSet, rj string, templates int) bool {
	if s, errs := contract.ParseScheduler(js.Annotations[contract.SchedulerAnnotationKey], nil); len(errs) > 0 || s != contract.SchedulerKubernetes {
		return false
	}
	r := ReplicatedJob(js, rj)
	if r == nil || templates < 1 || templates > MaxPodGroupClaims {
		return false
	}
	if composite, errs := contract.ParseComposite(js.Annotations[contract.CompositeAnnotationKey], nil); len(errs) == 0 && composite {
		return true // each Job is a PodGroup of its own
	}
	if r.Replicas != 1 {
		return false
	}
	stages, errs := Stages(js)
	if len(errs) > 0 {
		return false
	}
	for _, st := range stages {
		if len(st.ReplicatedJobs) == 1 && st.ReplicatedJobs[0] == rj {
			return true
		}
	}
	return false
}
