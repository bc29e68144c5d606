package volumeclaims

import (
	"fmt"
	"slices"
	"strconv"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// PodVolume is a volume of a pod that the Pod webhook sets.
type PodVolume struct {
	// Index in pod.spec.volumes of the placeholder to replace, or -1 to append.
	Index  int
	Volume corev1.Volume
	// Identity is whose the PVC the volume names must be (contract.Identity.Of): the pod's
	// JobSet (its name and UID labels), template, ReplicatedJob and indexes.
	Identity contract.Identity
	// Claim is the PVC the volume names, as far as the pod tells: its name, its template's
	// name, and the ReplicatedJob and indexes of a per-pod one (Of completes it).
	Claim Claim
}

// Of is v's Claim completed from js's policies: the template (its spec, labels and
// annotations), the policy and its retention, so that Claim.PVC makes the very PVC the
// reconciler makes. ok is false when no policy of js has v's template for v's ReplicatedJob
// (or, for a shared one, as a shared template).
func (v PodVolume) Of(js *jobsetv1alpha2.JobSet, policies []contract.VolumeClaimPolicy) (Claim, bool) {
	c := v.Claim
	if !c.Shared() {
		// Only an index the JobSet has: a pod's labels are not the JobSet's word.
		rj := ReplicatedJob(js, c.ReplicatedJob)
		if rj == nil || c.JobIndex >= int(rj.Replicas) || c.PodIndex >= Completions(rj) {
			return Claim{}, false
		}
	}
	for i, p := range policies {
		if p.Shared() != c.Shared() || (!c.Shared() && !slices.Contains(p.TargetReplicatedJobs, c.ReplicatedJob)) {
			continue
		}
		for j := range p.Templates {
			if p.Templates[j].Name == c.Template.Name {
				c.Template, c.Policy, c.Retention = &p.Templates[j], i, p.RetentionPolicy
				if !c.Shared() {
					c.Targets = p.TargetReplicatedJobs
				}
				return c, true
			}
		}
	}
	return Claim{}, false
}

// PodVolumes are the per-pod volumes to set in pod, from the labels and annotations JobSet, the
// Job controller and Inject put on it: each replaces the placeholder volume of its name, or is
// appended when there is none. A volume of that name that is not the placeholder is left as
// it is, so the Pod webhook is idempotent.
func PodVolumes(pod *corev1.Pod) ([]PodVolume, error) {
	names := splitNames(pod.Annotations[contract.VolumeClaimsPerPodVolumesAnnotationKey])
	if len(names) == 0 {
		return nil, nil
	}
	jobSet := pod.Labels[contract.JobSetNameLabelKey]
	rj := pod.Labels[contract.ReplicatedJobNameLabelKey]
	jobIndex, err := strconv.Atoi(pod.Labels[contract.JobIndexLabelKey])
	if jobSet == "" || rj == "" || err != nil {
		return nil, fmt.Errorf("pod has no JobSet, ReplicatedJob or Job index label (%s, %s, %s)",
			contract.JobSetNameLabelKey, contract.ReplicatedJobNameLabelKey, contract.JobIndexLabelKey)
	}
	podIndex, err := strconv.Atoi(pod.Annotations[batchv1.JobCompletionIndexAnnotation])
	if err != nil {
		return nil, fmt.Errorf("pod has no completion index annotation %s: its Job must be Indexed", batchv1.JobCompletionIndexAnnotation)
	}
	var vols []PodVolume
	for _, name := range names {
		i := slices.IndexFunc(pod.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == name })
		if i >= 0 && !IsPlaceholder(pod.Spec.Volumes[i]) {
			continue
		}
		claim, err := contract.PerPodVolumeClaimName(name, jobSet, rj, jobIndex, podIndex)
		if err != nil {
			return nil, err
		}
		c := Claim{Name: claim, Template: &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name}}, ReplicatedJob: rj, JobIndex: jobIndex, PodIndex: podIndex}
		vols = append(vols, PodVolume{Index: i, Volume: ClaimVolume(name, claim), Claim: c, Identity: c.Identity(&jobsetv1alpha2.JobSet{
			ObjectMeta: metav1.ObjectMeta{Name: jobSet, UID: types.UID(pod.Labels[contract.JobSetUIDLabelKey])},
		})})
	}
	return vols, nil
}

// SharedVolumes are the volumes of pod that mount its JobSet's shared PVCs (those Inject
// listed in the shared-volumes annotation, whose claimName is still the shared PVC's), each
// with whose that PVC must be: the pod's JobSet (its name and UID labels) and the template.
// The Pod webhook changes none of them; it denies a pod whose shared PVC is another JobSet's.
func SharedVolumes(pod *corev1.Pod) []PodVolume {
	names := splitNames(pod.Annotations[contract.VolumeClaimsSharedVolumesAnnotationKey])
	jobSet := pod.Labels[contract.JobSetNameLabelKey]
	if len(names) == 0 || jobSet == "" {
		return nil
	}
	js := &jobsetv1alpha2.JobSet{ObjectMeta: metav1.ObjectMeta{Name: jobSet, UID: types.UID(pod.Labels[contract.JobSetUIDLabelKey])}}
	var vols []PodVolume
	for _, name := range names {
		claim, err := contract.SharedVolumeClaimName(name, jobSet)
		if err != nil || claimOf(&pod.Spec, name) != claim {
			continue // not the shared PVC's volume (the JobSet webhook put none): nothing to check
		}
		c := Claim{Name: claim, Template: &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name}}}
		vols = append(vols, PodVolume{Index: -1, Volume: ClaimVolume(name, claim), Claim: c, Identity: c.Identity(js)})
	}
	return vols
}
