// Package checks runs on a new JobSet what the four add-ons' JobSet webhooks check without the
// cluster (Check), each add-on's part from its own package below, the same functions its webhook
// calls: kubectl jobset-addons lint is CheckWith on the JobSets of manifests, with the API
// server's own validation of the objects the webhooks dry-run.
package checks

import (
	batchv1 "k8s.io/api/batch/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/pkg/addon"
	"github.com/jobset-addons/jobset-addons/pkg/addon/checks/podgroups"
	"github.com/jobset-addons/jobset-addons/pkg/addon/checks/resourceclaims"
	"github.com/jobset-addons/jobset-addons/pkg/addon/checks/sequencer"
	"github.com/jobset-addons/jobset-addons/pkg/addon/checks/volumeclaims"
)

// Check is what the add-ons' JobSet webhooks refuse (errs) and warn of in a new JobSet, of what
// needs no cluster (CheckWith, without judging the objects the add-ons would make).
func Check(in *jobsetv1alpha2.JobSet) (errs field.ErrorList, warnings []string) {
	return CheckWith(in, nil)
}

// Validator judges, offline, an object an add-on would make for a JobSet as the API server's
// own validation would: its problems, at paths of the object (spec.resources[storage]).
type Validator func(obj client.Object) field.ErrorList

// CheckWith is what the add-ons' JobSet webhooks refuse (errs) and warn of in a new JobSet, of
// what needs no cluster: on a copy, JobSet's own defaults (JobSetDefaults) and the add-ons'
// mutating webhooks' checks and changes first (podgroups' ForeignGangs; volumeclaims' Default,
// the sequencer's with the barrier's default settings), then each add-on's checks, and
// validate (when not nil) on each object the webhooks dry-run (PVCs, ResourceClaims, barrier
// pods), its problems under the path the object comes from, as the webhooks tell the API
// server's. Each add-on's Warnings come, as from its webhook, only when it refuses nothing
// (resourceclaims' always).
func CheckWith(in *jobsetv1alpha2.JobSet, validate Validator) (errs field.ErrorList, warnings []string) {
	js := in.DeepCopy()
	JobSetDefaults(js)
	if podgroups.Uses(js) && len(podgroups.ValidateCreate(js)) == 0 {
		// podgroups' mutating webhook refuses a foreign gang before anything is injected.
		s, gangs, _ := podgroups.Read(js)
		if foreign := podgroups.ForeignGangs(js, s, gangs); len(foreign) > 0 {
			return foreign, nil
		}
	}
	volumeclaims.Default(js)
	sequencer.Default(js, sequencer.DefaultBarrierSettings())
	judge := func(runs []addon.DryRun) field.ErrorList {
		if validate == nil {
			return nil
		}
		var out field.ErrorList
		for _, d := range runs {
			if e := validate(d.Object); len(e) > 0 {
				out = append(out, addon.Causes(d.Path, apierrors.NewInvalid(schema.GroupKind{}, d.Object.GetName(), e))...)
			}
		}
		return out
	}
	add := func(e field.ErrorList, w func() []string) {
		errs = append(errs, e...)
		if len(e) == 0 {
			warnings = append(warnings, w()...)
		}
	}
	vc := volumeclaims.ParseJobSet(js)
	vcErrs := vc.Validate(js)
	add(append(vcErrs, judge(vc.DryRuns(js, vcErrs))...), func() []string { return vc.Warnings(js) })
	rc, named := resourceclaims.ValidateCreate(js)
	errs = append(errs, rc...)
	errs = append(errs, judge(resourceclaims.DryRuns(js, named))...)
	warnings = append(warnings, resourceclaims.Warnings(js)...)
	sp := sequencer.ParseJobSet(js)
	seq := sp.Validate(js)
	if len(seq) == 0 {
		seq = judge(sequencer.BarrierDryRuns(js))
	}
	add(seq, func() []string { return sp.Warnings(js) })
	add(podgroups.ValidateCreate(js), func() []string { return podgroups.Warnings(js) })
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
