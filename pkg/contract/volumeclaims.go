package contract

import (
	"reflect"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// RetentionPolicyType says what happens to created objects (PVCs, ResourceClaims) at an event.
type RetentionPolicyType string

const (
	// RetentionPolicyDelete deletes the objects.
	RetentionPolicyDelete RetentionPolicyType = "Delete"
	// RetentionPolicyRetain keeps the objects.
	RetentionPolicyRetain RetentionPolicyType = "Retain"
)

var retentionPolicies = []RetentionPolicyType{RetentionPolicyDelete, RetentionPolicyRetain}

// VolumeClaimPolicy is one entry of the PoliciesAnnotationKey annotation (JobSet KEP-572 shape).
type VolumeClaimPolicy struct {
	// TargetReplicatedJobs names the ReplicatedJobs the policy applies to. Empty: all
	// ReplicatedJobs share one PVC per template (named by SharedVolumeClaimName). Not empty: each
	// pod of each target gets its own PVC per template (named by PerPodVolumeClaimName), one per
	// job index and completion index. Names are unique. The parser turns an empty list into nil.
	TargetReplicatedJobs []string `json:"targetReplicatedJobs,omitempty"`

	// Templates are the PVCs to make. metadata.name is the name of the volumeMount (and of the
	// pod volume the webhook adds): required, a DNS-1123 label, unique across all the policies of
	// the annotation. metadata may also set labels and annotations, nothing else (no namespace).
	// spec needs resources.requests.storage; the rest of it is the API server's to judge (the
	// volumeclaims webhook has it check each template's PVC by a dry-run create). status must be
	// empty; apiVersion and kind may be left out or be v1 and PersistentVolumeClaim. At least one
	// template is required.
	Templates []corev1.PersistentVolumeClaim `json:"templates"`

	// RetentionPolicy says when the PVCs are deleted. The parser fills in every default.
	RetentionPolicy VolumeRetentionPolicy `json:"retentionPolicy"`
}

// VolumeRetentionPolicy says what happens to a policy's PVCs at each event. For shared PVCs the
// events are the JobSet's; for per-pod PVCs, they are reached when all target ReplicatedJobs
// reach them.
type VolumeRetentionPolicy struct {
	// WhenComplete applies once the JobSet (or all targets) completed. Default Retain.
	WhenComplete RetentionPolicyType `json:"whenComplete,omitempty"`
	// WhenFailed applies once the JobSet (or all targets) failed. Default Retain.
	WhenFailed RetentionPolicyType `json:"whenFailed,omitempty"`
	// WhenDeleted applies when the JobSet is deleted. Default Delete (through an owner reference
	// from the PVC to the JobSet, set only for Delete).
	WhenDeleted RetentionPolicyType `json:"whenDeleted,omitempty"`
	// FinishedPods says what happens, when whenComplete or whenFailed deletes the PVCs, to the
	// JobSet's finished (Succeeded or Failed) pods that mount them. Kubernetes keeps a deleted
	// PVC, Terminating, while any pod that was scheduled with it exists, finished or not: Retain
	// (the default) leaves the pods, and the storage is released only when they go (the JobSet
	// deleted, or its spec.ttlSecondsAfterFinished); Delete deletes them, after recording how
	// each ended in an Event, so that the storage is released at once. Delete needs whenComplete
	// or whenFailed to be Delete.
	FinishedPods RetentionPolicyType `json:"finishedPods,omitempty"`

	// ExpireAfterUnused, when set, deletes a PVC that a Retain kept (its JobSet completed,
	// failed or deleted) once no pod has used it for this long (a Go duration, "72h"), by the
	// PVC's Unused condition or, without it, volumeclaims' own clock; a JobSet that reuses the
	// PVC restarts the clock. Positive; refused where the policy retains nothing.
	ExpireAfterUnused *metav1.Duration `json:"expireAfterUnused,omitempty"`
	// WhenNodeLost says what happens to a per-pod PVC whose volume can only be used on nodes
	// (pinned by kubernetes.io/hostname, matched against the Nodes' labels) that are all lost:
	// deleted (no Node matches any more) or tainted node.kubernetes.io/out-of-service (the
	// machine is down, as an operator or the cloud says). Recreate deletes the PVC (its data
	// given up) and the pods stuck on the node, for a new, empty PVC; Keep (the default) waits.
	// A node that is only NotReady or unreachable is not lost: its pods may still run behind a
	// partition (see WhenNodeUnreachable). Recreate is refused on a shared policy.
	WhenNodeLost NodeLostPolicyType `json:"whenNodeLost,omitempty"`
	// WhenNodeUnreachable says what happens when the nodes are NotReady or unreachable, not
	// lost, for nodeLostGracePeriod: Keep (the default) tells it in a Warning Event and waits
	// for the node, or for an operator to mark it out of service; Recreate gives the data up
	// as whenNodeLost: Recreate does, and force-deletes the pods there, which may still be
	// running and writing beside their replacements. Recreate needs whenNodeLost: Recreate.
	WhenNodeUnreachable NodeLostPolicyType `json:"whenNodeUnreachable,omitempty"`
	// NodeLostGracePeriod is how long volumeclaims has itself seen a node NotReady or
	// unreachable before it tells so, or, with whenNodeUnreachable: Recreate, gives the data
	// up (a deleted or out-of-service node is lost at once). Counted on the add-on's own clock
	// from when it first saw the node so, never from the node's taints; a restart of the
	// add-on starts it again. Default 5m; at least MinVolumeNodeLostGracePeriod at admission.
	NodeLostGracePeriod *metav1.Duration `json:"nodeLostGracePeriod,omitempty"`
}

// DeletesOnFinish tells whether whenComplete or whenFailed deletes the PVCs.
func (r VolumeRetentionPolicy) DeletesOnFinish() bool {
	return r.WhenComplete == RetentionPolicyDelete || r.WhenFailed == RetentionPolicyDelete
}

// Default retention of VolumeRetentionPolicy fields left unset.
const (
	DefaultVolumeWhenComplete = RetentionPolicyRetain
	DefaultVolumeWhenFailed   = RetentionPolicyRetain
	DefaultVolumeWhenDeleted  = RetentionPolicyDelete
	DefaultVolumeFinishedPods = RetentionPolicyRetain
)

// Shared tells whether the policy makes one PVC per template shared by all ReplicatedJobs
// (no targets), rather than one per pod of each target.
func (p VolumeClaimPolicy) Shared() bool {
	return len(p.TargetReplicatedJobs) == 0
}

// Targets tells whether the policy's PVCs are mounted by the pods of the ReplicatedJob: true for
// every ReplicatedJob when the policy is shared.
func (p VolumeClaimPolicy) Targets(replicatedJob string) bool {
	return p.Shared() || slices.Contains(p.TargetReplicatedJobs, replicatedJob)
}

// TemplateNames lists the names of the policy's templates, in order.
func (p VolumeClaimPolicy) TemplateNames() []string {
	names := make([]string, len(p.Templates))
	for i := range p.Templates {
		names[i] = p.Templates[i].Name
	}
	return names
}

// ParseVolumeClaimPolicies parses the value of the PoliciesAnnotationKey annotation, a YAML or
// JSON list of VolumeClaimPolicy, strictly (see README.md), with the defaults filled in. path is
// the annotation's path, JobSetAnnotationPath(PoliciesAnnotationKey). An empty value or an empty
// list is refused.
//
// It checks what the value alone can tell. Whether each target exists and is an Indexed Job,
// and whether each template matches a volumeMount and clashes with no volume, needs the JobSet:
// the caller checks those.
func ParseVolumeClaimPolicies(value string, path *field.Path) ([]VolumeClaimPolicy, field.ErrorList) {
	var policies []VolumeClaimPolicy
	decodeErrs := decodeStrict(value, path, &policies)
	var errs field.ErrorList
	if len(decodeErrs) == 0 && len(policies) == 0 {
		errs = append(errs, field.Required(path, "must be a non-empty list of volume claim policies"))
	}
	templateNames := map[string]bool{}
	for i := range policies {
		pol := &policies[i]
		pp := path.Index(i)
		if len(pol.TargetReplicatedJobs) == 0 {
			pol.TargetReplicatedJobs = nil
		}
		errs = append(errs, validateUniqueNames(pol.TargetReplicatedJobs, pp.Child("targetReplicatedJobs"), "")...)
		if len(pol.Templates) == 0 {
			errs = append(errs, field.Required(pp.Child("templates"), "at least one PersistentVolumeClaim template is required"))
		}
		for j := range pol.Templates {
			tp := pp.Child("templates").Index(j)
			errs = append(errs, validateVolumeClaimTemplate(&pol.Templates[j], tp)...)
			name := pol.Templates[j].Name
			if name != "" && templateNames[name] {
				errs = append(errs, field.Duplicate(tp.Child("metadata", "name"), name))
			}
			templateNames[name] = true
		}
		errs = append(errs, defaultRetention(&pol.RetentionPolicy, pp.Child("retentionPolicy"))...)
		errs = append(errs, defaultLifecycle(&pol.RetentionPolicy, pol.Shared(), pp.Child("retentionPolicy"))...)
	}
	return policies, joinErrors(decodeErrs, errs)
}

// validateVolumeClaimTemplate checks one PVC template: what only the annotation has (no
// namespace, no status), and the storage request, whose path the API server gives less exactly
// (spec.resources[storage]). The spec's other fields are the API server's to judge.
func validateVolumeClaimTemplate(pvc *corev1.PersistentVolumeClaim, path *field.Path) field.ErrorList {
	errs := validateTypeMeta(pvc.TypeMeta, path, "v1", "PersistentVolumeClaim")
	errs = append(errs, validateTemplateMetadata(pvc.ObjectMeta, path.Child("metadata"))...)
	spec := path.Child("spec")
	if _, ok := pvc.Spec.Resources.Requests[corev1.ResourceStorage]; !ok {
		errs = append(errs, field.Required(spec.Child("resources", "requests").Key(string(corev1.ResourceStorage)), ""))
	}
	if !reflect.ValueOf(pvc.Status).IsZero() {
		errs = append(errs, field.Forbidden(path.Child("status"), "a template has no status"))
	}
	return errs
}

// defaultRetention checks the retention policy and fills in its defaults.
func defaultRetention(r *VolumeRetentionPolicy, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, f := range []struct {
		name  string
		value *RetentionPolicyType
		def   RetentionPolicyType
	}{
		{"whenComplete", &r.WhenComplete, DefaultVolumeWhenComplete},
		{"whenFailed", &r.WhenFailed, DefaultVolumeWhenFailed},
		{"whenDeleted", &r.WhenDeleted, DefaultVolumeWhenDeleted},
		{"finishedPods", &r.FinishedPods, DefaultVolumeFinishedPods},
	} {
		errs = append(errs, defaultRetentionValue(f.value, f.def, path.Child(f.name))...)
	}
	if len(errs) == 0 && r.FinishedPods == RetentionPolicyDelete && !r.DeletesOnFinish() {
		errs = append(errs, field.Invalid(path.Child("finishedPods"), r.FinishedPods,
			"deletes the finished pods that hold PVCs deleted by whenComplete or whenFailed: set one of them to Delete, or leave finishedPods out"))
	}
	return errs
}

// defaultRetentionValue sets an empty retention value to def, or checks it.
func defaultRetentionValue(v *RetentionPolicyType, def RetentionPolicyType, path *field.Path) field.ErrorList {
	if *v == "" {
		*v = def
		return nil
	}
	_, errs := parseEnum(string(*v), path, retentionPolicies, nil)
	return errs
}
