package volumeclaims

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// Default is what the volumeclaims mutating JobSet webhook does to a new JobSet: Inject, when
// its policies parse and it has a name (validation refuses the others).
func Default(js *jobsetv1alpha2.JobSet) {
	if js.Name == "" {
		return
	}
	policies, ok, errs := Parse(js)
	if !ok || len(errs) > 0 {
		return
	}
	Inject(js, policies)
}

// Parsed is what one admission reads of a JobSet's policies annotation, once, for its steps
// to share (Validate, DryRuns, Warnings): the policies, whether the annotation is there, the
// parser's problems, and the PVCs the policies give with the problems of their names.
type Parsed struct {
	Policies []contract.VolumeClaimPolicy
	// Present is false when the JobSet has no policies annotation.
	Present bool
	// Errs are the parser's problems, NameErrs those of the PVCs' names (Claims).
	Errs, NameErrs field.ErrorList
	Claims         []Claim
}

// ParseJobSet reads the policies of js and the PVCs they give, as js is now (after Default).
func ParseJobSet(js *jobsetv1alpha2.JobSet) *Parsed {
	p := &Parsed{}
	p.Policies, p.Present, p.Errs = Parse(js)
	if p.Present {
		p.Claims, p.NameErrs = Claims(js, p.Policies)
	}
	return p
}

// ValidateCreate checks the policies of js, as Default left it, against js: every problem of
// the policies that needs no cluster, each at its path.
func ValidateCreate(js *jobsetv1alpha2.JobSet) field.ErrorList {
	return ParseJobSet(js).Validate(js)
}

// Validate checks the policies p read of js (as Default left it) against js: every problem of
// the policies that needs no cluster, each at its path.
func (p *Parsed) Validate(js *jobsetv1alpha2.JobSet) field.ErrorList {
	if !p.Present {
		return nil
	}
	errs := slices.Clone(p.Errs)
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
	for i := range p.Policies {
		errs = append(errs, validatePolicy(js, &p.Policies[i], AnnotationPath.Index(i), refused)...)
	}
	told := sets.New[string]()
	for _, e := range p.NameErrs {
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
	errs := validateNodeLostGrace(p, path, refused)
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
		if !Indexed(rj) {
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
		if Mounts(&js.Spec.ReplicatedJobs[r].Template.Spec.Template.Spec, name) {
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
			if vol.Name != name || (injected != "" && claimName(vol) == injected) || (!p.Shared() && IsPlaceholder(vol)) {
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

// Warnings warns of each policy of js whose whenComplete or whenFailed is Delete while its
// finishedPods is Retain (Parsed.Warnings).
func Warnings(js *jobsetv1alpha2.JobSet) []string {
	return ParseJobSet(js).Warnings(js)
}

// Warnings warns of each policy whose whenComplete or whenFailed is Delete while its
// finishedPods is Retain: Kubernetes keeps a deleted PVC while any pod that ran with it exists,
// and JobSet keeps its finished pods, so the storage is released only when the JobSet's pods
// go: with spec.ttlSecondsAfterFinished after the JobSet finishes, never earlier for a targeted
// ReplicatedJob that finishes while others run.
func (p *Parsed) Warnings(js *jobsetv1alpha2.JobSet) []string {
	if !p.Present || len(p.Errs) > 0 {
		return nil
	}
	var warnings []string
	for i, pol := range p.Policies {
		r := pol.RetentionPolicy
		if !r.DeletesOnFinish() || r.FinishedPods == contract.RetentionPolicyDelete {
			continue
		}
		path := AnnotationPath.Index(i).Child("retentionPolicy")
		switch {
		case js.Spec.TTLSecondsAfterFinished == nil:
			warnings = append(warnings, fmt.Sprintf("%s: the PVCs it deletes stay Terminating, their storage held, while the JobSet's finished pods exist "+
				"(Kubernetes' pvc-protection), that is until the JobSet is deleted: set spec.ttlSecondsAfterFinished, or finishedPods: Delete to have volumeclaims delete those pods", path))
		case !pol.Shared() && len(pol.TargetReplicatedJobs) < len(js.Spec.ReplicatedJobs):
			warnings = append(warnings, fmt.Sprintf("%s: the per-pod PVCs it deletes when their ReplicatedJobs finish stay Terminating while the JobSet runs "+
				"(Kubernetes' pvc-protection keeps them for the finished pods): set finishedPods: Delete to have volumeclaims delete those pods", path))
		}
	}
	return warnings
}
