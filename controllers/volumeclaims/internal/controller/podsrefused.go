package controller

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/pkg/addon"
	"github.com/jobset-addons/jobset-addons/pkg/addon/checks/volumeclaims"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// PodsRefused is addon.PodsRefused's Concerns for volumeclaims: the API server's refusal of a
// pod of job concerns the add-on when its message names, whole, one of the PVCs the policies of
// js mount in that Job's pods (a shared PVC, or a per-pod PVC of the Job). It names the PVC and
// its template.
func PodsRefused(js *jobsetv1alpha2.JobSet, job *batchv1.Job, message string) (what string, ok bool) {
	policies, ok, errs := volumeclaims.Parse(js)
	if !ok || len(errs) > 0 {
		return "", false
	}
	words := addon.NamedIn(message)
	rj := job.Labels[contract.ReplicatedJobNameLabelKey]
	jobIndex := job.Labels[contract.JobIndexLabelKey]
	for _, p := range policies {
		for _, t := range p.Templates {
			if p.Shared() {
				if name, err := contract.SharedVolumeClaimName(t.Name, js.Name); err == nil && words[name] {
					return fmt.Sprintf("the shared PersistentVolumeClaim %s (template %s)", name, t.Name), true
				}
				continue
			}
			if !slices.Contains(p.TargetReplicatedJobs, rj) {
				continue
			}
			if name, ok := perPodNamed(words, t.Name, js.Name, rj, jobIndex); ok {
				return fmt.Sprintf("the per-pod PersistentVolumeClaim %s (template %s)", name, t.Name), true
			}
		}
	}
	return "", false
}

// perPodNamed finds, among words, a per-pod PVC name of template for the Job of index jobIndex
// of the ReplicatedJob rj: <template>-<jobset>-<rj>-<jobIndex>-<completion index>.
func perPodNamed(words map[string]bool, template, jobSet, rj, jobIndex string) (string, bool) {
	index, err := strconv.Atoi(jobIndex)
	if err != nil {
		return "", false
	}
	prefix, err := contract.PerPodVolumeClaimName(template, jobSet, rj, index, 0)
	if err != nil {
		return "", false
	}
	prefix = strings.TrimSuffix(prefix, "0")
	for w := range words {
		if rest, ok := strings.CutPrefix(w, prefix); ok {
			if n, err := strconv.Atoi(rest); err == nil && n >= 0 && strconv.Itoa(n) == rest {
				return w, true
			}
		}
	}
	return "", false
}
