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
// each of its Jobs (jobsets.PodGroupTakesClaims, the rule resourceclaims reads too), each
// ReplicatedJob's annotation parsed once and the rule given what Read knows already. Templates
// that do not parse go nowhere: the resourceclaims webhook refuses them.
func jobClaims(js *jobsetv1alpha2.JobSet, s Settings, stages []contract.Stage) map[string][]string {
	out := map[string][]string{}
	for _, st := range stages {
		for _, rjName := range st.ReplicatedJobs {
			rj := jobsets.ReplicatedJob(js, rjName)
			names, templates := templateClaims(rj)
			if len(names) > 0 && jobsets.PodGroupTakesClaims(s.claimsOnPodGroups(), s.Composite, len(st.ReplicatedJobs) == 1, rj.Replicas, templates) {
				out[rjName] = names
			}
		}
	}
	return out
}

// TemplateClaims are the ReplicatedJob's resourceclaims template names, but those its pod
// template claims itself; nil when none or more than a PodGroup lists.
func TemplateClaims(rj *jobsetv1alpha2.ReplicatedJob) []string {
	names, templates := templateClaims(rj)
	if templates < 1 || templates > jobsets.MaxPodGroupClaims {
		return nil
	}
	return names
}

// templateClaims are the ReplicatedJob's resourceclaims template names, but those its pod
// template claims itself, and how many templates it has (0 when they do not parse).
func templateClaims(rj *jobsetv1alpha2.ReplicatedJob) ([]string, int) {
	value, ok := rj.Template.Annotations[contract.TemplatesAnnotationKey]
	if !ok {
		return nil, 0
	}
	templates, errs := contract.ParseResourceClaimTemplates(value, field.NewPath("templates"))
	if len(errs) > 0 {
		return nil, 0
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
	return names, len(templates)
}
