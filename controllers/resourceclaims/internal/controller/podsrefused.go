package controller

import (
	"fmt"

	batchv1 "k8s.io/api/batch/v1"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/controllers/resourceclaims/internal/claims"
	"github.com/jobset-addons/jobset-addons/pkg/addon"
)

// PodsRefused is addon.PodsRefused's Concerns for resourceclaims: the API server's refusal of a
// pod of job concerns the add-on when its message names, whole, one of the ResourceClaims the
// Job's templates give its pods (not one a pod-level claim of the same name shadows). It names
// the claim and its template.
func PodsRefused(_ *jobsetv1alpha2.JobSet, job *batchv1.Job, message string) (what string, ok bool) {
	if !claims.HasTemplates(job) {
		return "", false
	}
	bindings, _ := claims.Bindings(job)
	words := addon.NamedIn(message)
	for _, b := range bindings {
		if !b.Shadowed && words[b.ClaimName] {
			return fmt.Sprintf("the ResourceClaim %s (template %s)", b.ClaimName, b.Template.Name), true
		}
	}
	return "", false
}
