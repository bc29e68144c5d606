package controller

import (
	corev1 "k8s.io/api/core/v1"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/pkg/addon"
)

// tellRefused tells, with one VolumeClaimsRefused Warning per template and cause not told yet
// (not one per retry), of the PVCs the API server refused for good, and returns them as an
// error for the back-off (addon.Refusals.Tell).
func (r *Reconciler) tellRefused(js *jobsetv1alpha2.JobSet, refused *addon.Refusals) error {
	return refused.Tell(&r.told, js.UID, "PersistentVolumeClaims", func(template string, names []string, err error) {
		addon.Tell(r.Recorder, js, claimRef(js, names[0]), corev1.EventTypeWarning, ReasonRefused, actionCreate,
			"The API server refuses the PersistentVolumeClaims of template %s (%d, such as %s) and will go on refusing them as they are: %v. "+
				"The pods that mount them wait; the JobSet is not failed (JobSet owns its status): delete it, and create it again with the template fixed. Retried with back-off",
			template, len(names), names[0], err)
	})
}
