// Package resourceclaims holds the checks and Warnings of the resourceclaims JobSet webhook
// that need no cluster (ValidateCreate, ScaledPastSharers, Warnings), which kubectl
// jobset-addons lint runs offline, and the claims lint validates as the API server would
// (DryRuns). The feature gate and the dry runs themselves stay with the controller.
package resourceclaims

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/pkg/addon"
	"github.com/jobset-addons/jobset-addons/pkg/addon/jobsets"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// Named is a template whose name ValidateCreate found valid, at Path, of the ReplicatedJob of
// index ReplicatedJob.
type Named struct {
	ReplicatedJob int
	Template      contract.ResourceClaimTemplate
	Path          *field.Path
}

// ValidateCreate checks every ReplicatedJob's templates against its pod template, without the
// cluster, and returns, beside the problems, the templates whose names are valid: the
// resourceclaims webhook has the API server judge the claim each of them gives (a dry run).
func ValidateCreate(js *jobsetv1alpha2.JobSet) (field.ErrorList, []Named) {
	var errs field.ErrorList
	var named []Named
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
			if err := TooManySharers(js, rj, len(templates), path); err != nil {
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
			named = append(named, Named{ReplicatedJob: i, Template: t, Path: tp})
		}
	}
	return errs, named
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

// DryRuns are, for lint's offline validation, the claims the named templates give the first
// Job of their ReplicatedJobs, under each template's path: the template's metadata and spec
// under the claim's name, in the JobSet's namespace. The add-on's own labels and the owner
// reference, which the reconciler adds and the webhook's dry runs carry, are valid whatever the
// template says, and left out.
func DryRuns(js *jobsetv1alpha2.JobSet, named []Named) []addon.DryRun {
	out := make([]addon.DryRun, 0, len(named))
	for _, n := range named {
		job := jobsets.JobName(js.Name, js.Spec.ReplicatedJobs[n.ReplicatedJob].Name, 0)
		name, _ := contract.ResourceClaimName(job, n.Template.Name, 0) // the longest name was checked
		claim := &resourcev1.ResourceClaim{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: js.Namespace, Labels: n.Template.Labels, Annotations: n.Template.Annotations},
			Spec:       *n.Template.Spec.DeepCopy(),
		}
		out = append(out, addon.DryRun{Path: n.Path, What: "the ResourceClaim " + name, Object: claim})
	}
	return out
}
