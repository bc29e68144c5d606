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
// them) of the JobSet's ReplicatedJob rj go on its Job's PodGroup (PodGroupTakesClaims), read
// from the JobSet's annotations; templates is how many rj has. podgroups then writes the claims
// into that PodGroup; resourceclaims lets such a Job have more than MaxClaimSharers pods
// (podgroups refuses it where the apiserver drops a PodGroup's claims).
func ClaimsOnPodGroup(js *jobsetv1alpha2.JobSet, rj string, templates int) bool {
	s, errs := contract.ParseScheduler(js.Annotations[contract.SchedulerAnnotationKey], nil)
	r := ReplicatedJob(js, rj)
	if len(errs) > 0 || r == nil {
		return false
	}
	composite, errs := contract.ParseComposite(js.Annotations[contract.CompositeAnnotationKey], nil)
	return PodGroupTakesClaims(s == contract.SchedulerKubernetes, len(errs) == 0 && composite, aloneInStage(js, rj), r.Replicas, templates)
}

// PodGroupTakesClaims is the rule, in one place, for whether the per-Job claims of a
// ReplicatedJob go on its Job's PodGroup, where kube-scheduler reserves each for the PodGroup
// rather than for each pod (feature gate DRAWorkloadResourceClaims), so that more than
// MaxClaimSharers pods may share one: the JobSet asks podgroups for scheduler kubernetes
// (kubernetes), whose PodGroups list claims; it gangs each Job as a PodGroup of its own
// (composite), or the ReplicatedJob has one Job (replicas) and is alone in its stage, so that
// the stage's PodGroup gangs that Job's pods and no other's; and the ReplicatedJob has from one
// to MaxPodGroupClaims templates. ClaimsOnPodGroup reads it from a JobSet; podgroups from the
// settings and stages it has read already.
func PodGroupTakesClaims(kubernetes, composite, aloneInStage bool, replicas int32, templates int) bool {
	return kubernetes && templates >= 1 && templates <= MaxPodGroupClaims && (composite || (replicas == 1 && aloneInStage))
}

// aloneInStage tells whether the ReplicatedJob rj is the only one of its stage.
func aloneInStage(js *jobsetv1alpha2.JobSet, rj string) bool {
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
