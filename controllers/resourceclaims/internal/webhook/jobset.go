package webhook

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/component-base/featuregate"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/controllers/resourceclaims/internal/claims"
	"github.com/jobset-addons/jobset-addons/pkg/addon"
	"github.com/jobset-addons/jobset-addons/pkg/addon/checks/resourceclaims"
	"github.com/jobset-addons/jobset-addons/pkg/addon/jobsets"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// JobSetWebhook validates the templates annotation of a JobSet's ReplicatedJobs on CREATE and
// keeps it immutable on UPDATE.
type JobSetWebhook struct {
	// DryRun, when set, has the API server judge the claim each template gives the first Job of
	// its ReplicatedJob with a dry-run create: its validation of resource.k8s.io/v1, its
	// admission, the namespace's quota (addon.DryRunner).
	DryRun *addon.DryRunner
	Gates  featuregate.FeatureGate
}

var _ admission.Validator[*jobsetv1alpha2.JobSet] = (*JobSetWebhook)(nil)

// ValidateCreate refuses a JobSet whose templates are not valid for it, every problem as a
// field error in one response.
func (w *JobSetWebhook) ValidateCreate(ctx context.Context, js *jobsetv1alpha2.JobSet) (admission.Warnings, error) {
	if !w.Gates.Enabled(claims.Gate) {
		return gateOff(js), nil
	}
	errs, samples := validateJobSet(js)
	refused, warnings := w.DryRun.Check(ctx, samples)
	warnings = append(warnings, resourceclaims.Warnings(js)...)
	return warnings, jobsets.Invalid(js, append(errs, refused...))
}

// ValidateUpdate keeps the templates annotation of every ReplicatedJob as it was created, and
// refuses a change of parallelism or completions (JobSet's ElasticJobSet) that makes a Job run
// more pods at once than its shared claims serve.
func (w *JobSetWebhook) ValidateUpdate(_ context.Context, oldJS, newJS *jobsetv1alpha2.JobSet) (admission.Warnings, error) {
	errs := jobsets.ImmutableReplicatedJobAnnotations(oldJS, newJS, contract.TemplatesAnnotationKey)
	errs = append(errs, resourceclaims.ScaledPastSharers(oldJS, newJS)...)
	return nil, jobsets.Invalid(newJS, errs)
}

// ValidateDelete allows every deletion.
func (w *JobSetWebhook) ValidateDelete(context.Context, *jobsetv1alpha2.JobSet) (admission.Warnings, error) {
	return nil, nil
}

func gateOff(js *jobsetv1alpha2.JobSet) admission.Warnings {
	for _, rj := range js.Spec.ReplicatedJobs {
		if _, ok := rj.Template.Annotations[contract.TemplatesAnnotationKey]; ok {
			return admission.Warnings{fmt.Sprintf("resourceclaims: the feature gate %s is off: the %s annotations are ignored", claims.Gate, contract.TemplatesAnnotationKey)}
		}
	}
	return nil
}

// validateJobSet checks every ReplicatedJob's templates against its pod template, without API
// calls (resourceclaims.ValidateCreate), and returns the claims still to be checked by the API server:
// for each template whose name is valid, the claim it gives the ReplicatedJob's first Job, as
// the reconciler makes it, under the template's path.
func validateJobSet(js *jobsetv1alpha2.JobSet) (field.ErrorList, []addon.DryRun) {
	errs, named := resourceclaims.ValidateCreate(js)
	samples := make([]addon.DryRun, 0, len(named))
	for _, n := range named {
		samples = append(samples, sample(js, &js.Spec.ReplicatedJobs[n.ReplicatedJob], n.Template, n.Path))
	}
	return errs, samples
}

// sample is the claim the template t at path gives the first Job of rj, as the reconciler makes
// it ahead of the Job (owned by the JobSet, when the JobSet already has its UID), for a dry run. Its
// Key is what its acceptance depends on: the namespace and the template's metadata and spec.
// Its spec is the template's (addon.DryRun.TemplateSpec): a field of it the API server drops
// (a device request's tolerations where their feature is off) is warned of.
func sample(js *jobsetv1alpha2.JobSet, rj *jobsetv1alpha2.ReplicatedJob, t contract.ResourceClaimTemplate, path *field.Path) addon.DryRun {
	job := claims.JobName(js.Name, rj.Name, 0)
	name, _ := contract.ResourceClaimName(job, t.Name, 0) // the longest name was checked
	claim := claims.Claim(js.Namespace, js.Name, rj.Name, 0, claims.JobSetOwner(js), claims.Binding{Template: t, ClaimName: name})
	if js.UID == "" {
		claim.OwnerReferences = nil
	}
	key := addon.TemplateKey(js.Namespace, t.Labels, t.Annotations, t.Spec)
	parts := []string{contract.ResourceClaimTemplateLabelKey, contract.ReplicatedJobNameLabelKey, contract.JobIndexLabelKey}
	labels := make(map[string]string, len(parts))
	for _, k := range parts {
		labels[k] = claim.Labels[k]
	}
	// A claim of the name another JobSet's Job holds refuses the JobSet; one an earlier JobSet
	// of this name left for the same Job and template is the reconciler's to replace.
	id := &contract.Identity{ManagedBy: contract.ResourceClaimsManagedByValue, JobSet: js.Name, UID: js.UID, Labels: labels, Parts: parts}
	return addon.DryRun{Path: path, What: "the ResourceClaim " + name, Object: claim, Key: key, Identity: id, TemplateSpec: true}
}
