// Package volumeclaims turns a JobSet's volume claim policies into the PVCs they ask for and
// the volumes its pods mount: the one place where the webhooks and the reconciler agree on
// names, counts and labels. It holds the JobSet webhook's injection and checks that need no
// cluster too (Default, ParseJobSet and its Validate and Warnings), which kubectl
// jobset-addons lint runs offline, and the PVCs the webhook dry-runs and lint validates as the
// API server would (Parsed.DryRuns); the dry runs themselves stay with the controller.
package volumeclaims

import (
	"slices"
	"strconv"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/pkg/addon/jobsets"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// AnnotationPath is the field path of the policies annotation on a JobSet.
var AnnotationPath = contract.JobSetAnnotationPath(contract.PoliciesAnnotationKey)

// Uses says whether the JobSet asks for volume claims: whether it carries the annotation.
func Uses(js *jobsetv1alpha2.JobSet) bool {
	_, ok := js.Annotations[contract.PoliciesAnnotationKey]
	return ok
}

// Parse reads the policies of js; ok is false when js has no policies annotation.
func Parse(js *jobsetv1alpha2.JobSet) (policies []contract.VolumeClaimPolicy, ok bool, errs field.ErrorList) {
	value, ok := js.Annotations[contract.PoliciesAnnotationKey]
	if !ok {
		return nil, false, nil
	}
	policies, errs = contract.ParseVolumeClaimPolicies(value, AnnotationPath)
	return policies, true, errs
}

// Claim is one PVC that a JobSet's policies ask for.
type Claim struct {
	// Name of the PVC.
	Name string
	// Template the PVC is made from; its metadata.name is the volume name in the pods.
	Template *corev1.PersistentVolumeClaim
	// Policy is the index of the policy in the annotation.
	Policy    int
	Retention contract.VolumeRetentionPolicy
	// ReplicatedJob, JobIndex and PodIndex place a per-pod PVC; ReplicatedJob is empty for a
	// shared one.
	ReplicatedJob      string
	JobIndex, PodIndex int
	// Targets are the ReplicatedJobs the claim's policy targets (empty for a shared one).
	Targets []string
}

// Shared says whether every pod that mounts the template shares this PVC.
func (c Claim) Shared() bool { return c.ReplicatedJob == "" }

// Completions is the number of pods (completion indexes) of each Job of rj that get a
// per-pod PVC: completions, or parallelism when completions is unset, or 1.
func Completions(rj *jobsetv1alpha2.ReplicatedJob) int {
	spec := rj.Template.Spec
	switch {
	case spec.Completions != nil:
		return int(*spec.Completions)
	case spec.Parallelism != nil:
		return int(*spec.Parallelism)
	}
	return 1
}

// Claims lists every PVC the policies ask for, policies and templates in order, per-pod PVCs
// by ReplicatedJob, Job index and completion index. A name the contract refuses is an error at
// the template's metadata.name; unknown targets are skipped (validation reports them).
func Claims(js *jobsetv1alpha2.JobSet, policies []contract.VolumeClaimPolicy) ([]Claim, field.ErrorList) {
	var claims []Claim
	var errs field.ErrorList
	for i, p := range policies {
		for j := range p.Templates {
			t := &p.Templates[j]
			namePath := AnnotationPath.Index(i).Child("templates").Index(j).Child("metadata", "name")
			if p.Shared() {
				name, err := contract.SharedVolumeClaimName(t.Name, js.Name)
				if err != nil {
					errs = append(errs, field.Invalid(namePath, t.Name, err.Error()))
					continue
				}
				claims = append(claims, Claim{Name: name, Template: t, Policy: i, Retention: p.RetentionPolicy})
				continue
			}
			for _, target := range p.TargetReplicatedJobs {
				rj := ReplicatedJob(js, target)
				if rj == nil || !Mounts(&rj.Template.Spec.Template.Spec, t.Name) {
					continue // a target that does not mount the template gets no PVCs
				}
				// The longest name has the highest indexes: check it once, then build the rest.
				if _, err := contract.PerPodVolumeClaimName(t.Name, js.Name, rj.Name, int(rj.Replicas)-1, Completions(rj)-1); err != nil {
					errs = append(errs, field.Invalid(namePath, t.Name, err.Error()))
					continue
				}
				for job := range int(rj.Replicas) {
					for pod := range Completions(rj) {
						name, _ := contract.PerPodVolumeClaimName(t.Name, js.Name, rj.Name, job, pod)
						claims = append(claims, Claim{
							Name: name, Template: t, Policy: i, Retention: p.RetentionPolicy,
							ReplicatedJob: rj.Name, JobIndex: job, PodIndex: pod, Targets: p.TargetReplicatedJobs,
						})
					}
				}
			}
		}
	}
	return claims, errs
}

// ReplicatedJob returns the ReplicatedJob of js named name, or nil.
func ReplicatedJob(js *jobsetv1alpha2.JobSet, name string) *jobsetv1alpha2.ReplicatedJob {
	return jobsets.ReplicatedJob(js, name)
}

// PVC is the object to create for c in js's namespace: the template's spec, labels and
// annotations, the add-on's labels, js's UID, and an owner reference to js only for
// whenDeleted Delete.
func (c Claim) PVC(js *jobsetv1alpha2.JobSet) *corev1.PersistentVolumeClaim {
	labels := map[string]string{}
	for k, v := range c.Template.Labels {
		labels[k] = v
	}
	for k, v := range c.Labels(js.Name) {
		labels[k] = v
	}
	annotations := map[string]string{}
	for k, v := range c.Template.Annotations {
		annotations[k] = v
	}
	annotations[contract.VolumeClaimJobSetUIDAnnotationKey] = string(js.UID)
	if v, ok := ExpiryAnnotation(c.Retention); ok {
		annotations[contract.VolumeClaimExpireAfterUnusedAnnotationKey] = v
	}
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{
			Name:        c.Name,
			Namespace:   js.Namespace,
			Labels:      labels,
			Annotations: annotations,
		},
		Spec: *c.Template.Spec.DeepCopy(),
	}
	if c.Retention.WhenDeleted == contract.RetentionPolicyDelete {
		pvc.OwnerReferences = []metav1.OwnerReference{OwnerReference(js)}
	}
	return pvc
}

// Labels are the add-on's labels on c's PVC.
func (c Claim) Labels(jobSet string) map[string]string {
	l := map[string]string{
		contract.ManagedByLabelKey:           contract.VolumeClaimsManagedByValue,
		contract.JobSetNameLabelKey:          jobSet,
		contract.VolumeClaimTemplateLabelKey: c.Template.Name,
	}
	if !c.Shared() {
		l[contract.VolumeClaimReplicatedJobLabelKey] = c.ReplicatedJob
		l[contract.VolumeClaimJobIndexLabelKey] = strconv.Itoa(c.JobIndex)
		l[contract.VolumeClaimPodIndexLabelKey] = strconv.Itoa(c.PodIndex)
	}
	return l
}

// Identity is what makes a PVC of c's name js's (contract.Identity.Of): the add-on's labels
// naming js and c's template, ReplicatedJob and indexes, and js's UID.
func (c Claim) Identity(js *jobsetv1alpha2.JobSet) contract.Identity {
	labels := c.Labels(js.Name)
	delete(labels, contract.ManagedByLabelKey)
	delete(labels, contract.JobSetNameLabelKey)
	return contract.Identity{
		ManagedBy: contract.VolumeClaimsManagedByValue, JobSet: js.Name, UID: js.UID,
		UIDKey: contract.VolumeClaimJobSetUIDAnnotationKey, Labels: labels, Parts: contract.VolumeClaimPartLabelKeys,
	}
}

// OwnerReference makes js the owner of a PVC, so that the garbage collector deletes the PVC
// with js. It is not a controller reference: a reused PVC may have other owners.
func OwnerReference(js *jobsetv1alpha2.JobSet) metav1.OwnerReference {
	return metav1.OwnerReference{
		APIVersion: jobsetv1alpha2.GroupVersion.String(),
		Kind:       "JobSet",
		Name:       js.Name,
		UID:        js.UID,
	}
}

// Mounts says whether a container or init container of spec mounts the volume name.
func Mounts(spec *corev1.PodSpec, name string) bool {
	for _, cs := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
		for _, c := range cs {
			for _, m := range c.VolumeMounts {
				if m.Name == name {
					return true
				}
			}
		}
	}
	return false
}

// HasVolume says whether spec already has a volume called name.
func HasVolume(spec *corev1.PodSpec, name string) bool {
	return slices.ContainsFunc(spec.Volumes, func(v corev1.Volume) bool { return v.Name == name })
}

// ClaimVolume is the pod volume name that mounts the PVC claimName.
func ClaimVolume(name, claimName string) corev1.Volume {
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claimName},
	}}
}

// Inject is what the JobSet mutating webhook does to an admitted JobSet: shared volumes into
// the pod templates that mount them, the per-pod scope label and volume list into targeted pod
// templates, and the admission marker. It is idempotent.
func Inject(js *jobsetv1alpha2.JobSet, policies []contract.VolumeClaimPolicy) {
	for _, p := range policies {
		for j := range p.Templates {
			t := &p.Templates[j]
			if p.Shared() {
				claim, err := contract.SharedVolumeClaimName(t.Name, js.Name)
				if err != nil {
					continue // refused by validation
				}
				for i := range js.Spec.ReplicatedJobs {
					pt := &js.Spec.ReplicatedJobs[i].Template.Spec.Template
					if !Mounts(&pt.Spec, t.Name) {
						continue
					}
					if !HasVolume(&pt.Spec, t.Name) {
						pt.Spec.Volumes = append(pt.Spec.Volumes, ClaimVolume(t.Name, claim))
					}
					if claimOf(&pt.Spec, t.Name) == claim { // not a volume of the user's of that name
						annotateName(&pt.ObjectMeta, contract.VolumeClaimsSharedVolumesAnnotationKey, t.Name)
					}
				}
				continue
			}
			for _, target := range p.TargetReplicatedJobs {
				rj := ReplicatedJob(js, target)
				if rj == nil || !Mounts(&rj.Template.Spec.Template.Spec, t.Name) {
					continue
				}
				spec := &rj.Template.Spec.Template.Spec
				if !HasVolume(spec, t.Name) {
					spec.Volumes = append(spec.Volumes, ClaimVolume(t.Name, contract.VolumeClaimsPlaceholderClaimName))
				}
				meta := &rj.Template.Spec.Template.ObjectMeta
				if meta.Labels == nil {
					meta.Labels = map[string]string{}
				}
				meta.Labels[contract.VolumeClaimsPerPodLabelKey] = contract.EnabledValue
				annotateName(meta, contract.VolumeClaimsPerPodVolumesAnnotationKey, t.Name)
			}
		}
	}
	if js.Annotations == nil {
		js.Annotations = map[string]string{}
	}
	js.Annotations[contract.VolumeClaimsAdmittedAnnotationKey] = contract.EnabledValue
}

// claimOf is the claimName of spec's volume name, or "" when it has none or it is not a PVC.
func claimOf(spec *corev1.PodSpec, name string) string {
	i := slices.IndexFunc(spec.Volumes, func(v corev1.Volume) bool { return v.Name == name })
	if i < 0 || spec.Volumes[i].PersistentVolumeClaim == nil {
		return ""
	}
	return spec.Volumes[i].PersistentVolumeClaim.ClaimName
}

// annotateName adds name to the comma-separated list of meta's annotation key.
func annotateName(meta *metav1.ObjectMeta, key, name string) {
	if meta.Annotations == nil {
		meta.Annotations = map[string]string{}
	}
	meta.Annotations[key] = addName(meta.Annotations[key], name)
}

func addName(list, name string) string {
	names := splitNames(list)
	if !slices.Contains(names, name) {
		names = append(names, name)
	}
	slices.Sort(names)
	return strings.Join(names, ",")
}

func splitNames(list string) []string {
	if list == "" {
		return nil
	}
	return strings.Split(list, ",")
}

// IsPlaceholder says whether v is the placeholder Inject puts in a targeted pod template.
func IsPlaceholder(v corev1.Volume) bool {
	return v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == contract.VolumeClaimsPlaceholderClaimName
}

// Indexed says whether rj's Jobs use the Indexed completion mode.
func Indexed(rj *jobsetv1alpha2.ReplicatedJob) bool {
	return ptr.Deref(rj.Template.Spec.CompletionMode, batchv1.NonIndexedCompletion) == batchv1.IndexedCompletion
}

// ExpiryAnnotation is the value of contract.VolumeClaimExpireAfterUnusedAnnotationKey on the
// PVCs of a policy with this retention; ok is false when it has no expiry.
func ExpiryAnnotation(r contract.VolumeRetentionPolicy) (string, bool) {
	if r.ExpireAfterUnused == nil {
		return "", false
	}
	return r.ExpireAfterUnused.Duration.String(), true
}
