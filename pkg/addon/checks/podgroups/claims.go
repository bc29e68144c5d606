package podgroups

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/pkg/addon/jobsets"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// jobClaims are, by ReplicatedJob, the resourceclaims template names that go on the PodGroup of
// each of its Jobs, each ReplicatedJob's annotation parsed once. That is jobsets.ClaimsOnPodGroup
// (which resourceclaims reads too), decided here from what is known already: a scheduler whose
// PodGroups list claims, and either a composite gang (each Job a PodGroup) or a ReplicatedJob of
// one Job alone in its stage; at most jobsets.MaxPodGroupClaims templates. Templates that do not
// parse go nowhere: the resourceclaims webhook refuses them.
func jobClaims(js *jobsetv1alpha2.JobSet, s Settings, stages []contract.Stage) map[string][]string {
	if !s.claimsOnPodGroups() {
		return nil
	}
	out := map[string][]string{}
	for _, st := range stages {
		for _, rjName := range st.ReplicatedJobs {
			rj := jobsets.ReplicatedJob(js, rjName)
			if s.Composite || (len(st.ReplicatedJobs) == 1 && rj.Replicas == 1) {
				if names := TemplateClaims(rj); names != nil {
					out[rjName] = names
				}
			}
		}
	}
	return out
}

// TemplateClaims are the ReplicatedJob's resourceclaims template names, but those its pod
// template claims itself; nil when none or more than a PodGroup lists.
func TemplateClaims(rj *jobsetv1alpha2.ReplicatedJob) []string {
	value, ok := rj.Template.Annotations[contract.TemplatesAnnotationKey]
	if !ok {
		return nil
	}
	templates, errs := contract.ParseResourceClaimTemplates(value, field.NewPath("templates"))
	if len(errs) > 0 || len(templates) < 1 || len(templates) > jobsets.MaxPodGroupClaims {
		return nil
	}
	own := rj.Template.Spec.Template.Spec.ResourceClaims
	var names []string
	for _, t := range templates {
		// A pod template's own claim of the name wins over the template (the resourceclaims Job
		// webhook leaves it): the pods do not use the Job's claim, so the PodGroup does not list it.
		if !slices.ContainsFunc(own, func(c corev1.PodResourceClaim) bool { return c.Name == t.Name }) {
			names = append(names, t.Name)
		}
	}
	return names
}
