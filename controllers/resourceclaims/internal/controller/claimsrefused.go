package controller

import (
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/pkg/addon"
)

// tellRefused tells, with one ResourceClaimsRefused Warning per template and cause not told yet
// (not one per retry), of the claims the API server refused for good, and returns them as an
// error for the back-off (addon.Refusals.Tell). The related object is the Job of the first
// claim (which may not exist yet: claims are made ahead).
func (r *Reconciler) tellRefused(js *jobsetv1alpha2.JobSet, refused *addon.Refusals, jobOf map[string]string) error {
	return refused.Tell(&r.told, js.UID, "ResourceClaims", func(template string, names []string, err error) {
		job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: js.Namespace, Name: jobOf[names[0]]}}
		addon.Tell(r.Recorder, js, job, corev1.EventTypeWarning, ReasonRefused, actionCreate,
			"The API server refuses the ResourceClaims of template %s (%d, such as %s) and will go on refusing them as they are: %v. "+
				"The pods that use them wait; the JobSet is not failed (JobSet owns its status): delete it, and create it again with the template fixed. Retried with back-off",
			template, len(names), names[0], err)
	})
}
