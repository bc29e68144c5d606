package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/component-base/featuregate"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/controllers/resourceclaims/internal/claims"
	"github.com/jobset-addons/jobset-addons/pkg/addon/jobsets"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// JobSetWebhook validates the templates annotation of a JobSet's ReplicatedJobs on CREATE and
// keeps it immutable on UPDATE.
type JobSetWebhook struct {
	// Client, when set, checks each template's spec with a dry-run create of a ResourceClaim, so
	// that the API server's own validation of resource.k8s.io/v1 (and its admission) judges it.
	// It should have a rate limit of its own: admission must not wait behind the reconciler.
	Client client.Client
	Gates  featuregate.FeatureGate

	// valid remembers the sample claims (namespace, metadata and spec) the API server accepted,
	// so that JobSets made from one template are not checked again and again.
	valid seen
}

// seen is a bounded set of strings, emptied when full.
type seen struct {
	mu  sync.Mutex
	set map[string]struct{}
}

const seenSize = 1024

func (s *seen) has(k string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.set[k]
	return ok
}

func (s *seen) add(k string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.set == nil || len(s.set) >= seenSize {
		s.set = make(map[string]struct{}, seenSize)
	}
	s.set[k] = struct{}{}
}

var _ admission.Validator[*jobsetv1alpha2.JobSet] = (*JobSetWebhook)(nil)

// ValidateCreate refuses a JobSet whose templates are not valid for it, every problem as a
// field error in one response.
func (w *JobSetWebhook) ValidateCreate(ctx context.Context, js *jobsetv1alpha2.JobSet) (admission.Warnings, error) {
	if !w.Gates.Enabled(claims.Gate) {
		return gateOff(js), nil
	}
	errs, samples := validateJobSet(js)
	warnings := w.checkSpecs(ctx, js, samples, &errs)
	return warnings, jobsets.Invalid(js, errs)
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

// sample is a claim one template would give, for the API server to check by dry run.
type sample struct {
	path  *field.Path // the template, spec.replicatedJobs[i]...annotations[...][j]
	claim *resourcev1.ResourceClaim
}

// validateJobSet checks every ReplicatedJob's templates against its pod template, without API
// calls, and returns the claims whose specs are still to be checked by the API server.
func validateJobSet(js *jobsetv1alpha2.JobSet) (field.ErrorList, []sample) {
	var errs field.ErrorList
	var samples []sample
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
			samples = append(samples, sample{path: tp, claim: &resourcev1.ResourceClaim{
				ObjectMeta: metav1.ObjectMeta{GenerateName: "resourceclaims-validate-", Namespace: js.Namespace, Labels: t.Labels, Annotations: t.Annotations},
				Spec:       t.Spec,
			}})
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

// checkSpecs has the API server validate each sample claim with a dry-run create, and adds
// what it refuses to errs under the template's path. A dry run that fails for another reason
// does not refuse the JobSet: it warns, and the claim is validated again when it is created.
func (w *JobSetWebhook) checkSpecs(ctx context.Context, js *jobsetv1alpha2.JobSet, samples []sample, errs *field.ErrorList) admission.Warnings {
	if w.Client == nil {
		return nil
	}
	var warnings admission.Warnings
	for _, s := range samples {
		key, keyErr := json.Marshal(s.claim)
		if keyErr == nil && w.valid.has(string(key)) {
			continue
		}
		err := w.Client.Create(ctx, s.claim, client.DryRunAll)
		if err == nil {
			if keyErr == nil {
				w.valid.add(string(key))
			}
			continue
		}
		var status apierrors.APIStatus
		if apierrors.IsInvalid(err) && errors.As(err, &status) && status.Status().Details != nil && len(status.Status().Details.Causes) > 0 {
			for _, c := range status.Status().Details.Causes {
				*errs = append(*errs, causeError(s.path, c))
			}
			continue
		}
		logf.FromContext(ctx).Info("Could not check a resource claim template by dry run", "jobset", js.Name, "template", s.path.String(), "err", err)
		warnings = append(warnings, fmt.Sprintf("resourceclaims: %s could not be checked by the API server (%v); it is checked again when its claims are created", s.path, err))
	}
	return warnings
}

// causeError turns a cause of the API server's Invalid error for a sample claim into a field
// error under the template's path: spec.devices.requests[0]... becomes
// spec.replicatedJobs[i]...annotations[...][j].spec.devices.requests[0]...
func causeError(template *field.Path, c metav1.StatusCause) *field.Error {
	t := field.ErrorType(c.Type)
	detail := strings.TrimPrefix(strings.TrimPrefix(c.Message, t.String()), ": ")
	p := template
	if c.Field != "" {
		p = template.Child(c.Field)
	}
	return &field.Error{Type: t, Field: p.String(), BadValue: field.OmitValueType{}, Detail: detail}
}
