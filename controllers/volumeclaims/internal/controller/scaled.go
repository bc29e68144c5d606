package controller

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/pkg/addon/checks/volumeclaims"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// scaledDown returns, as claims, the JobSet's per-pod PVCs (existing: the add-on's, of this
// JobSet) that the policies no longer list because a lowering of completions (JobSet's
// ElasticJobSet gate) took their completion index away: a PVC of the same template and
// ReplicatedJob as a listed claim, at the name that claim's policy gives its indexes. Each is
// its listed sibling with its own indexes, so that retention treats it as the ReplicatedJob's
// other PVCs: kept while the ReplicatedJob runs (scale-down is not completion: it holds the
// checkpoint of an index that may come back), deleted with them by whenComplete / whenFailed.
// Only the JobSet's own PVCs (its UID): a PVC an earlier JobSet of the same name left at an
// index this one does not run is not this one's to adopt, hold or delete; it keeps its own
// retention and expiry.
func scaledDown(js *jobsetv1alpha2.JobSet, claims []volumeclaims.Claim, existing map[string]*corev1.PersistentVolumeClaim) []volumeclaims.Claim {
	listed := sets.New[string]()
	siblings := map[[2]string]volumeclaims.Claim{} // template, ReplicatedJob → a listed claim
	for _, c := range claims {
		listed.Insert(c.Name)
		if !c.Shared() {
			if _, ok := siblings[[2]string{c.Template.Name, c.ReplicatedJob}]; !ok {
				siblings[[2]string{c.Template.Name, c.ReplicatedJob}] = c
			}
		}
	}
	var out []volumeclaims.Claim
	for name, pvc := range existing {
		if listed.Has(name) || pvc.Annotations[contract.VolumeClaimJobSetUIDAnnotationKey] != string(js.UID) {
			continue
		}
		l := pvc.Labels
		sibling, ok := siblings[[2]string{l[contract.VolumeClaimTemplateLabelKey], l[contract.VolumeClaimReplicatedJobLabelKey]}]
		if !ok {
			continue
		}
		job, jerr := strconv.Atoi(l[contract.VolumeClaimJobIndexLabelKey])
		pod, perr := strconv.Atoi(l[contract.VolumeClaimPodIndexLabelKey])
		if jerr != nil || perr != nil {
			continue
		}
		if want, err := contract.PerPodVolumeClaimName(sibling.Template.Name, js.Name, sibling.ReplicatedJob, job, pod); err != nil || want != name {
			continue
		}
		c := sibling
		c.Name, c.JobIndex, c.PodIndex = name, job, pod
		out = append(out, c)
	}
	return out
}
