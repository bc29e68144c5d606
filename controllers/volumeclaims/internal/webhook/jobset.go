package webhook

import (
	"context"
	"fmt"
	"slices"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/controllers/volumeclaims/internal/policy"
	"github.com/jobset-addons/jobset-addons/pkg/addon"
	"github.com/jobset-addons/jobset-addons/pkg/addon/jobsets"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// JobSetWebhook defaults and validates JobSets that carry the policies annotation. Its only API
// calls are the dry runs of DryRun.
type JobSetWebhook struct {
	// DryRun, when set, has the API server judge the PVC each template gives (the first one, for
	// per-pod templates) with a dry-run create, on CREATE: its validation of the spec, its
	// admission, the namespace's quota (addon.DryRunner).
	DryRun *addon.DryRunner
}

var (
	_ admission.Defaulter[*jobsetv1alpha2.JobSet] = (*JobSetWebhook)(nil)
	_ admission.Validator[*jobsetv1alpha2.JobSet] = (*JobSetWebhook)(nil)
)

// markerPath is the field path of the admission marker.
var markerPath = contract.JobSetAnnotationPath(contract.VolumeClaimsAdmittedAnnotationKey)

// Default injects, on CREATE, the shared volumes into the pod templates that mount them, the
// per-pod scope label and volume list into the targeted pod templates, and the admission
// marker (policy.Inject). It leaves alone a JobSet whose policies do not parse (validation
// refuses it), a JobSet without a name yet (generateName: validation refuses it, as the PVC
// names need the name), and any operation but CREATE: on UPDATE the pod templates are
// immutable upstream and the marker may not change.
func (w *JobSetWebhook) Default(ctx context.Context, js *jobsetv1alpha2.JobSet) error {
	if req, err := admission.RequestFromContext(ctx); err == nil && req.Operation != admissionv1.Create {
		return nil
	}
	if js.Name == "" {
		return nil
	}
	policies, ok, errs := policy.Parse(js)
	if !ok || len(errs) > 0 {
		return nil
	}
	policy.Inject(js, policies)
	return nil
}

// ValidateCreate refuses a JobSet whose policies are not valid for it, with every problem
// as a field error in one response: those it finds itself, and those the API server finds in
// a dry run of each template's PVC. It warns of a PVC the API server does not accept for now
// (quota), and of a Delete retention that will not free the storage when it fires
// (retentionWarnings).
func (w *JobSetWebhook) ValidateCreate(ctx context.Context, js *jobsetv1alpha2.JobSet) (admission.Warnings, error) {
	errs := validateCreate(js)
	refused, warnings := w.DryRun.Check(ctx, dryRuns(js, errs))
	if errs = append(errs, refused...); len(errs) > 0 {
		return warnings, jobsets.Invalid(js, errs)
	}
	return append(warnings, retentionWarnings(js)...), nil
}

// dryRuns are the PVCs for the API server to check: for each template without a problem of its
// own in errs, the first PVC it gives, as the reconciler makes it (with the owner reference
// only when the JobSet has its UID yet). A JobSet without a name (generateName) has none: its
// PVCs cannot be named, and validation refuses it.
func dryRuns(js *jobsetv1alpha2.JobSet, errs field.ErrorList) []addon.DryRun {
	if js.Name == "" {
		return nil
	}
	policies, ok, parseErrs := policy.Parse(js)
	if !ok || len(parseErrs) > 0 && len(policies) == 0 {
		return nil
	}
	claims, _ := policy.Claims(js, policies)
	var out []addon.DryRun
	for i := range policies {
		for j := range policies[i].Templates {
			t := &policies[i].Templates[j]
			tp := policy.AnnotationPath.Index(i).Child("templates").Index(j)
			if hasErrorAt(errs, tp) {
				continue
			}
			k := slices.IndexFunc(claims, func(c policy.Claim) bool { return c.Policy == i && c.Template.Name == t.Name })
			if k < 0 {
				continue // no ReplicatedJob mounts it: told
			}
			pvc := claims[k].PVC(js)
			if js.UID == "" {
				pvc.OwnerReferences = nil
			}
			key := addon.TemplateKey(js.Namespace, t.Labels, t.Annotations, t.Spec)
			out = append(out, addon.DryRun{Path: tp, What: "the PersistentVolumeClaim " + pvc.Name, Object: pvc, Key: key})
		}
	}
	return out
}

// hasErrorAt tells whether errs has an error at path or under it.
func hasErrorAt(errs field.ErrorList, path *field.Path) bool {
	p := path.String()
	return slices.ContainsFunc(errs, func(e *field.Error) bool {
		return e.Field == p || strings.HasPrefix(e.Field, p+".") || strings.HasPrefix(e.Field, p+"[")
	})
}

// retentionWarnings warns of each policy whose whenComplete or whenFailed is Delete while its
// finishedPods is Retain: Kubernetes keeps a deleted PVC while any pod that ran with it exists,
// and JobSet keeps its finished pods, so the storage is released only when the JobSet's pods
// go: with spec.ttlSecondsAfterFinished after the JobSet finishes, never earlier for a targeted
// ReplicatedJob that finishes while others run.
func retentionWarnings(js *jobsetv1alpha2.JobSet) admission.Warnings {
	policies, ok, errs := policy.Parse(js)
	if !ok || len(errs) > 0 {
		return nil
	}
	var warnings admission.Warnings
	for i, p := range policies {
		r := p.RetentionPolicy
		if !r.DeletesOnFinish() || r.FinishedPods == contract.RetentionPolicyDelete {
			continue
		}
		path := policy.AnnotationPath.Index(i).Child("retentionPolicy")
		switch {
		case js.Spec.TTLSecondsAfterFinished == nil:
			warnings = append(warnings, fmt.Sprintf("%s: the PVCs it deletes stay Terminating, their storage held, while the JobSet's finished pods exist "+
				"(Kubernetes' pvc-protection), that is until the JobSet is deleted: set spec.ttlSecondsAfterFinished, or finishedPods: Delete to have volumeclaims delete those pods", path))
		case !p.Shared() && len(p.TargetReplicatedJobs) < len(js.Spec.ReplicatedJobs):
			warnings = append(warnings, fmt.Sprintf("%s: the per-pod PVCs it deletes when their ReplicatedJobs finish stay Terminating while the JobSet runs "+
				"(Kubernetes' pvc-protection keeps them for the finished pods): set finishedPods: Delete to have volumeclaims delete those pods", path))
		}
	}
	return warnings
}

// ValidateUpdate keeps the policies annotation and the admission marker as they were created.
func (w *JobSetWebhook) ValidateUpdate(_ context.Context, oldJS, newJS *jobsetv1alpha2.JobSet) (admission.Warnings, error) {
	var errs field.ErrorList
	if annotationChanged(oldJS, newJS, contract.PoliciesAnnotationKey) {
		errs = append(errs, field.Forbidden(policy.AnnotationPath, "is immutable"))
	}
	if annotationChanged(oldJS, newJS, contract.VolumeClaimsAdmittedAnnotationKey) {
		errs = append(errs, field.Forbidden(markerPath,
			"is set by the volumeclaims webhook when the JobSet is created and may not be added, removed or changed"))
	}
	return nil, jobsets.Invalid(newJS, errs)
}

// ValidateDelete allows every deletion.
func (w *JobSetWebhook) ValidateDelete(context.Context, *jobsetv1alpha2.JobSet) (admission.Warnings, error) {
	return nil, nil
}

func annotationChanged(oldJS, newJS *jobsetv1alpha2.JobSet, key string) bool {
	oldValue, oldOK := oldJS.Annotations[key]
	newValue, newOK := newJS.Annotations[key]
	return oldOK != newOK || oldValue != newValue
}

// validateCreate checks the policies of js, as the mutating webhook left it, against js.
func validateCreate(js *jobsetv1alpha2.JobSet) field.ErrorList {
	policies, ok, errs := policy.Parse(js)
	if !ok {
		return nil
	}
	if js.GenerateName != "" && js.Annotations[contract.VolumeClaimsAdmittedAnnotationKey] == "" {
		// Mutating webhooks see no name when it is generated, so nothing was injected.
		errs = append(errs, field.Forbidden(field.NewPath("metadata", "generateName"),
			fmt.Sprintf("a JobSet with %s needs metadata.name: the names of its PersistentVolumeClaims are built from it", contract.PoliciesAnnotationKey)))
	}
	// A template whose name the parser refused is not checked further: its problem is told.
	refused := sets.New[string]()
	for _, e := range errs {
		refused.Insert(e.Field)
	}
	for i := range policies {
		errs = append(errs, validatePolicy(js, &policies[i], policy.AnnotationPath.Index(i), refused)...)
	}
	_, nameErrs := policy.Claims(js, policies)
	told := sets.New[string]()
	for _, e := range nameErrs {
		if key := e.Field + "\x00" + e.Detail; !refused.Has(e.Field) && !told.Has(key) {
			told.Insert(key)
			errs = append(errs, e)
		}
	}
	return errs
}

// validatePolicy checks one policy at path against js: its targets exist and are Indexed, and
// each template is mounted by, and clashes with no volume of, the ReplicatedJobs it applies to.
func validatePolicy(js *jobsetv1alpha2.JobSet, p *contract.VolumeClaimPolicy, path *field.Path, refused sets.Set[string]) field.ErrorList {
	var errs field.ErrorList
	// The indexes of the ReplicatedJobs the policy applies to.
	var applies []int
	if p.Shared() {
		for r := range js.Spec.ReplicatedJobs {
			applies = append(applies, r)
		}
	}
	for k, target := range p.TargetReplicatedJobs {
		tp := path.Child("targetReplicatedJobs").Index(k)
		r := replicatedJobIndex(js, target)
		if r < 0 {
			errs = append(errs, field.NotFound(tp, target))
			continue
		}
		rj := &js.Spec.ReplicatedJobs[r]
		if !policy.Indexed(rj) {
			mode := "unset"
			if rj.Template.Spec.CompletionMode != nil {
				mode = string(*rj.Template.Spec.CompletionMode)
			}
			errs = append(errs, field.Invalid(tp, target, fmt.Sprintf(
				"spec.replicatedJobs[%d].template.spec.completionMode must be Indexed for per-pod PersistentVolumeClaims (it is %s): a pod's PVC is chosen by its completion index", r, mode)))
		}
		applies = append(applies, r)
	}
	if len(applies) == 0 {
		return errs // no ReplicatedJob to check the templates against: told above
	}
	for j := range p.Templates {
		t := &p.Templates[j]
		np := path.Child("templates").Index(j).Child("metadata", "name")
		if t.Name == "" || refused.Has(np.String()) {
			continue
		}
		errs = append(errs, validateMounted(js, p, t.Name, applies, np)...)
		errs = append(errs, validateNoClash(js, p, t.Name, applies, np)...)
		errs = append(errs, validateNotUpstream(js, t.Name, np)...)
	}
	return errs
}

// validateNotUpstream checks that upstream JobSet's own spec.volumeClaimPolicies has no
// template called name: it would add a volume of that name too, and its shared PVC has the
// same name as ours (<claim>-<jobset>).
func validateNotUpstream(js *jobsetv1alpha2.JobSet, name string, np *field.Path) field.ErrorList {
	var errs field.ErrorList
	for u, up := range js.Spec.VolumeClaimPolicies {
		for v := range up.Templates {
			if up.Templates[v].Name == name {
				e := field.Duplicate(np, name)
				e.Detail = fmt.Sprintf("spec.volumeClaimPolicies[%d].templates[%d] has the same name: upstream JobSet would make a volume and a PersistentVolumeClaim of the same names", u, v)
				errs = append(errs, e)
			}
		}
	}
	return errs
}

// validateMounted checks that a container or init container of at least one of the
// ReplicatedJobs applies mounts the volume name.
func validateMounted(js *jobsetv1alpha2.JobSet, p *contract.VolumeClaimPolicy, name string, applies []int, np *field.Path) field.ErrorList {
	for _, r := range applies {
		if policy.Mounts(&js.Spec.ReplicatedJobs[r].Template.Spec.Template.Spec, name) {
			return nil
		}
	}
	where := "any ReplicatedJob"
	if !p.Shared() {
		names := make([]string, len(applies))
		for k, r := range applies {
			names[k] = js.Spec.ReplicatedJobs[r].Name
		}
		where = "the target ReplicatedJobs (" + strings.Join(names, ", ") + ")"
	}
	return field.ErrorList{field.Invalid(np, name,
		"must be the name of a volumeMount of a container or init container in "+where)}
}

// validateNoClash checks that no pod template of the ReplicatedJobs applies has a volume
// called name, except the one the mutating webhook injected (the shared PVC, or the per-pod
// placeholder).
func validateNoClash(js *jobsetv1alpha2.JobSet, p *contract.VolumeClaimPolicy, name string, applies []int, np *field.Path) field.ErrorList {
	injected := ""
	if p.Shared() {
		injected, _ = contract.SharedVolumeClaimName(name, js.Name) // a bad name is told by Claims
	}
	var errs field.ErrorList
	for _, r := range applies {
		for v, vol := range js.Spec.ReplicatedJobs[r].Template.Spec.Template.Spec.Volumes {
			if vol.Name != name || (injected != "" && claimName(vol) == injected) || (!p.Shared() && policy.IsPlaceholder(vol)) {
				continue
			}
			e := field.Duplicate(np, name)
			e.Detail = fmt.Sprintf("clashes with spec.replicatedJobs[%d].template.spec.template.spec.volumes[%d]: the template adds a volume of that name", r, v)
			if injected != "" {
				e.Detail += fmt.Sprintf(" (persistentVolumeClaim.claimName %s)", injected)
			}
			errs = append(errs, e)
		}
	}
	return errs
}

func claimName(v corev1.Volume) string {
	if v.PersistentVolumeClaim == nil {
		return ""
	}
	return v.PersistentVolumeClaim.ClaimName
}

func replicatedJobIndex(js *jobsetv1alpha2.JobSet, name string) int {
	for r := range js.Spec.ReplicatedJobs {
		if js.Spec.ReplicatedJobs[r].Name == name {
			return r
		}
	}
	return -1
}
