package webhook

import (
	"context"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/pkg/addon"
	"github.com/jobset-addons/jobset-addons/pkg/addon/checks/volumeclaims"
	"github.com/jobset-addons/jobset-addons/pkg/addon/jobsets"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// JobSetWebhook defaults and validates JobSets that carry the policies annotation. Its only API
// calls are the dry runs of DryRun; Claims is read from the cache.
type JobSetWebhook struct {
	// DryRun, when set, has the API server judge the PVC each template gives (the first one, for
	// per-pod templates) with a dry-run create, on CREATE: its validation of the spec, its
	// admission, the namespace's quota (addon.DryRunner).
	DryRun *addon.DryRunner
	// Claims, when set, reads the add-on's PVCs (the cache): a JobSet any of whose PVC names
	// (every index, not only the first the dry run looks at) another JobSet's PVC holds is
	// refused.
	Claims client.Reader
}

var (
	_ admission.Defaulter[*jobsetv1alpha2.JobSet] = (*JobSetWebhook)(nil)
	_ admission.Validator[*jobsetv1alpha2.JobSet] = (*JobSetWebhook)(nil)
)

// markerPath is the field path of the admission marker.
var markerPath = contract.JobSetAnnotationPath(contract.VolumeClaimsAdmittedAnnotationKey)

// Default injects, on CREATE, the shared volumes into the pod templates that mount them, the
// per-pod scope label and volume list into the targeted pod templates, and the admission
// marker (volumeclaims.Default). On UPDATE the pod templates are immutable upstream and the marker
// may not change: any operation but CREATE is left alone.
func (w *JobSetWebhook) Default(ctx context.Context, js *jobsetv1alpha2.JobSet) error {
	if req, err := admission.RequestFromContext(ctx); err == nil && req.Operation != admissionv1.Create {
		return nil
	}
	volumeclaims.Default(js)
	return nil
}

// ValidateCreate refuses a JobSet whose policies are not valid for it, with every problem
// as a field error in one response: those found without the cluster (volumeclaims.Parsed.Validate),
// and those the API server finds in a dry run of each template's PVC (volumeclaims.Parsed.DryRuns).
// It warns of a PVC the API server does not accept for now (quota), and of a Delete retention
// that will not free the storage when it fires (volumeclaims.Parsed.Warnings). The annotation is
// parsed once, and its PVCs built once, for all three.
func (w *JobSetWebhook) ValidateCreate(ctx context.Context, js *jobsetv1alpha2.JobSet) (admission.Warnings, error) {
	p := volumeclaims.ParseJobSet(js)
	errs := p.Validate(js)
	errs = append(errs, w.taken(ctx, js, p, errs)...)
	refused, warnings := w.DryRun.Check(ctx, p.DryRuns(js, errs))
	if errs = append(errs, refused...); len(errs) > 0 {
		return warnings, jobsets.Invalid(js, errs)
	}
	return append(warnings, p.Warnings(js)...), nil
}

// taken refuses, at the path of its template, each PVC of js's names that exists and is
// another JobSet's (volumeclaims.Parsed.Taken), for every index: one List of the add-on's PVCs in
// the namespace, then a look-up per claim. When the PVCs cannot be read, nothing is refused:
// the reconciler tells a name taken, and the Pod webhook denies the pods that would mount it.
func (w *JobSetWebhook) taken(ctx context.Context, js *jobsetv1alpha2.JobSet, p *volumeclaims.Parsed, errs field.ErrorList) field.ErrorList {
	if w.Claims == nil || js.Name == "" || len(p.Claims) == 0 {
		return nil
	}
	var list corev1.PersistentVolumeClaimList
	if err := w.Claims.List(ctx, &list, client.InNamespace(js.Namespace), client.MatchingLabels{
		contract.ManagedByLabelKey: contract.VolumeClaimsManagedByValue,
	}, client.UnsafeDisableDeepCopy); err != nil || len(list.Items) == 0 {
		return nil
	}
	existing := make(map[string]*corev1.PersistentVolumeClaim, len(list.Items))
	for i := range list.Items {
		existing[list.Items[i].Name] = &list.Items[i]
	}
	return p.Taken(js, existing, errs)
}

// ValidateUpdate keeps the policies annotation and the admission marker as they were created.
func (w *JobSetWebhook) ValidateUpdate(_ context.Context, oldJS, newJS *jobsetv1alpha2.JobSet) (admission.Warnings, error) {
	errs := jobsets.ImmutableAnnotations(oldJS, newJS, contract.PoliciesAnnotationKey)
	if jobsets.AnnotationChanged(oldJS.Annotations, newJS.Annotations, contract.VolumeClaimsAdmittedAnnotationKey) {
		errs = append(errs, field.Forbidden(markerPath,
			"is set by the volumeclaims webhook when the JobSet is created and may not be added, removed or changed"))
	}
	return nil, jobsets.Invalid(newJS, errs)
}

// ValidateDelete allows every deletion.
func (w *JobSetWebhook) ValidateDelete(context.Context, *jobsetv1alpha2.JobSet) (admission.Warnings, error) {
	return nil, nil
}
