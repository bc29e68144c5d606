// Package checks runs on a new JobSet what the four add-ons' JobSet webhooks check without the
// cluster (Check), each add-on's part from its own package below, the same functions its webhook
// calls: kubectl jobset-addons lint is Check on the JobSets of manifests.
package checks

import (
	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/pkg/addon/checks/podgroups"
	"github.com/jobset-addons/jobset-addons/pkg/addon/checks/resourceclaims"
	"github.com/jobset-addons/jobset-addons/pkg/addon/checks/sequencer"
	"github.com/jobset-addons/jobset-addons/pkg/addon/checks/volumeclaims"
)

// Check is what the add-ons' JobSet webhooks refuse (errs) and warn of in a new JobSet, of what
// needs no cluster: on a copy, JobSet's own defaults (JobSetDefaults) and the add-ons' mutating
// webhooks first, then each add-on's checks. Each add-on's Warnings come, as from its webhook,
// only when it refuses nothing (resourceclaims' always).
func Check(in *jobsetv1alpha2.JobSet) (errs field.ErrorList, warnings []string) {
	js := in.DeepCopy()
	JobSetDefaults(js)
	volumeclaims.Default(js)
	sequencer.Default(js, sequencer.BarrierSettings{})
	add := func(e field.ErrorList, w func(*jobsetv1alpha2.JobSet) []string) {
		errs = append(errs, e...)
		if len(e) == 0 {
			warnings = append(warnings, w(js)...)
		}
	}
	add(volumeclaims.ValidateCreate(js), volumeclaims.Warnings)
	rc, _ := resourceclaims.ValidateCreate(js)
	errs = append(errs, rc...)
	warnings = append(warnings, resourceclaims.Warnings(js)...)
	add(sequencer.ValidateCreate(js), sequencer.Warnings)
	add(podgroups.ValidateCreate(js), podgroups.Warnings)
	return errs, warnings
}

// JobSetDefaults sets what JobSet's own mutating webhook defaults and the add-ons' checks
// read: a ReplicatedJob's completionMode is Indexed when unset.
func JobSetDefaults(js *jobsetv1alpha2.JobSet) {
	for i := range js.Spec.ReplicatedJobs {
		spec := &js.Spec.ReplicatedJobs[i].Template.Spec
		if spec.CompletionMode == nil {
			spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
		}
	}
}
