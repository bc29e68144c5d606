package webhook

import (
	"strings"

	"github.com/jobset-addons/jobset-addons/pkg/addon/addontest"
	"github.com/jobset-addons/jobset-addons/pkg/addon/checks/volumeclaims"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// The builders of this package's tests are addontest's; these two add what volumeclaims'
// webhooks put on a pod template, and on its pods, for per-pod volumes.

// perPod is rj as the mutating webhook leaves a targeted pod template: the scope label, the
// list of per-pod volumes (comma-separated), and a placeholder volume for each.
func perPod(rj *addontest.ReplicatedJobWrapper, volumes string) *addontest.ReplicatedJobWrapper {
	for _, name := range strings.Split(volumes, ",") {
		if !volumeclaims.HasVolume(rj.PodSpec(), name) {
			rj.ClaimVolume(name, contract.VolumeClaimsPlaceholderClaimName)
		}
	}
	return rj.PodLabel(contract.VolumeClaimsPerPodLabelKey, contract.EnabledValue).
		PodAnnotation(contract.VolumeClaimsPerPodVolumesAnnotationKey, volumes)
}

// shared is rj as the JobSet webhook leaves a ReplicatedJob that mounts the shared templates
// volumes (comma-separated, sorted): their names in the shared-volumes annotation.
func shared(rj *addontest.ReplicatedJobWrapper, volumes string) *addontest.ReplicatedJobWrapper {
	return rj.PodAnnotation(contract.VolumeClaimsSharedVolumesAnnotationKey, volumes)
}

// pod is a pod in namespace default of a targeted pod template (the scope label), with the
// per-pod volumes annotation when volumes is not empty.
func pod(jobSet, rj string, jobIndex, completionIndex int, volumes string) *addontest.PodWrapper {
	p := addontest.Pod("default", jobSet, rj, jobIndex, completionIndex).
		Label(contract.VolumeClaimsPerPodLabelKey, contract.EnabledValue)
	if volumes != "" {
		p.Annotation(contract.VolumeClaimsPerPodVolumesAnnotationKey, volumes)
	}
	return p
}
