package webhook

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/component-base/featuregate"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/controllers/resourceclaims/internal/claims"
	"github.com/jobset-addons/jobset-addons/pkg/addon"
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
	warnings = append(warnings, kueueWarnings(js)...)
	return warnings, jobsets.Invalid(js, append(errs, refused...))
}

// ValidateUpdate keeps the templates annotation of every ReplicatedJob as it was created, and
// refuses a change of parallelism or completions (JobSet's ElasticJobSet) that makes a Job run
// more pods at once than its shared claims serve.
func (w *JobSetWebhook) ValidateUpdate(_ context.Context, oldJS, newJS *jobsetv1alpha2.JobSet) (admission.Warnings, error) {
	var errs field.ErrorList
	for i, rj := range newJS.Spec.ReplicatedJobs {
		j := slices.IndexFunc(oldJS.Spec.ReplicatedJobs, func(o jobsetv1alpha2.ReplicatedJob) bool { return o.Name == rj.Name })
		var old map[string]string
		if j >= 0 {
			old = oldJS.Spec.ReplicatedJobs[j].Template.Annotations
		}
		oldValue, oldOK := old[contract.TemplatesAnnotationKey]
		newValue, newOK := rj.Template.Annotations[contract.TemplatesAnnotationKey]
		if oldOK != newOK || oldValue != newValue {
			errs = append(errs, field.Forbidden(contract.ReplicatedJobAnnotationPath(i, contract.TemplatesAnnotationKey), "is immutable"))
		}
	}
	errs = append(errs, scaledPastSharers(oldJS, newJS)...)
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
// calls, and returns the claims still to be checked by the API server: for each template whose
// name is valid, the claim it gives the ReplicatedJob's first Job, as the reconciler makes it,
// under the template's path.
func validateJobSet(js *jobsetv1alpha2.JobSet) (field.ErrorList, []addon.DryRun) {
	var errs field.ErrorList
	var samples []addon.DryRun
	maxAttempt := 0
	if js.Spec.FailurePolicy != nil {
		maxAttempt = int(js.Spec.FailurePolicy.MaxRestarts)
	}
	for i := range js.Spec.ReplicatedJobs {
		rj := &js.Spec.ReplicatedJobs[i]
		value, ok := rj.Template.Annotations[contract.TemplatesAnnotationKey]
		if !ok {
			continue
		}
		path := contract.ReplicatedJobAnnotationPath(i, contract.TemplatesAnnotationKey)
		templates, parseErrs := contract.ParseResourceClaimTemplates(value, path)
		errs = append(errs, parseErrs...)
		refused := sets.New[string]()
		for _, e := range parseErrs {
			refused.Insert(e.Field)
		}
		if len(parseErrs) == 0 {
			if err := tooManySharers(js, rj, len(templates), path); err != nil {
				errs = append(errs, err)
			}
		}
		spec := &rj.Template.Spec.Template.Spec
		containers := sets.New[string]()
		for _, c := range slices.Concat(spec.InitContainers, spec.Containers) {
			containers.Insert(c.Name)
		}
		// The longest name is the last Job's in the last attempt JobSet may make.
		lastJob := jobsets.JobName(js.Name, rj.Name, max(rj.Replicas-1, 0))
		for j, t := range templates {
			tp := path.Index(j)
			if t.Containers != nil {
				for k, name := range *t.Containers {
					if !containers.Has(name) {
						errs = append(errs, field.Invalid(tp.Child("containers").Index(k), name, "no container or init container of the pod template has this name"))
					}
				}
			}
			if t.Name == "" || refused.Has(tp.Child("metadata", "name").String()) {
				continue // the parser told
			}
			errs = append(errs, clash(spec, t, tp)...)
			if js.Name == "" {
				continue // generateName: the validating webhook normally sees the generated name
			}
			if _, err := contract.ResourceClaimName(lastJob, t.Name, maxAttempt); err != nil {
				errs = append(errs, field.Invalid(tp.Child("metadata", "name"), t.Name, err.Error()))
				continue
			}
			samples = append(samples, sample(js, rj, t, tp))
		}
	}
	return errs, samples
}

// clash refuses a template named like a pod-level claim of the pod template when a container
// the template targets already references that claim: it would be ambiguous which the
// container means. Without such a container, the pod template's claim wins and the Job
// webhook warns.
func clash(spec *corev1.PodSpec, t contract.ResourceClaimTemplate, tp *field.Path) field.ErrorList {
	own := slices.IndexFunc(spec.ResourceClaims, func(c corev1.PodResourceClaim) bool { return c.Name == t.Name })
	if own < 0 {
		return nil
	}
	for _, c := range slices.Concat(spec.InitContainers, spec.Containers) {
		if t.AppliesToContainer(c.Name) && slices.ContainsFunc(c.Resources.Claims, func(r corev1.ResourceClaim) bool { return r.Name == t.Name }) {
			return field.ErrorList{field.Invalid(tp.Child("metadata", "name"), t.Name, fmt.Sprintf(
				"clashes with the pod template's own claim spec.resourceClaims[%d] of this name, which container %q already references and the template targets too: rename the template or leave that container out of its containers",
				own, c.Name))}
		}
	}
	return nil
}

// sample is the claim the template t at path gives the first Job of rj, as the reconciler makes
// it ahead of the Job (owned by the JobSet, when the JobSet has its UID yet), for a dry run. Its
// Key is what its acceptance depends on: the namespace and the template's metadata and spec.
func sample(js *jobsetv1alpha2.JobSet, rj *jobsetv1alpha2.ReplicatedJob, t contract.ResourceClaimTemplate, path *field.Path) addon.DryRun {
	job := claims.JobName(js.Name, rj.Name, 0)
	name, _ := contract.ResourceClaimName(job, t.Name, 0) // the longest name was checked
	claim := claims.Claim(js.Namespace, js.Name, rj.Name, 0, claims.JobSetOwner(js), claims.Binding{Template: t, ClaimName: name})
	if js.UID == "" {
		claim.OwnerReferences = nil
	}
	key := addon.TemplateKey(js.Namespace, t.Labels, t.Annotations, t.Spec)
	return addon.DryRun{Path: path, What: "the ResourceClaim " + name, Object: claim, Key: key}
}
