package resourceclaims

import (
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/util/validation/field"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/pkg/addon/jobsets"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// TooManySharers refuses, at path (rj's templates annotation), a ReplicatedJob whose Jobs run
// more pods at once than one claim reserved for each pod serves, unless its claims go on the
// Job's PodGroup.
func TooManySharers(js *jobsetv1alpha2.JobSet, rj *jobsetv1alpha2.ReplicatedJob, templates int, path *field.Path) *field.Error {
	pods := jobsets.PodsPerJob(rj)
	if pods <= jobsets.MaxClaimSharers || jobsets.ClaimsOnPodGroup(js, rj.Name, templates) {
		return nil
	}
	return field.Forbidden(path, fmt.Sprintf(
		"a Job of ReplicatedJob %q runs %d pods at once and shares these claims, and a claim reserved for each pod serves at most %d (a ResourceClaim's status.reservedFor): "+
			"run at most %d pods of a Job at once, or have the claims reserved for the Job's PodGroup: %s: %s on the JobSet, with %s: \"true\" or the ReplicatedJob with replicas 1 and alone in its stage, "+
			"at most %d templates, and a cluster with the feature gate DRAWorkloadResourceClaims",
		rj.Name, pods, jobsets.MaxClaimSharers, jobsets.MaxClaimSharers, contract.SchedulerAnnotationKey, contract.SchedulerKubernetes, contract.CompositeAnnotationKey, jobsets.MaxPodGroupClaims))
}

// ScaledPastSharers re-checks the claims' limit on an UPDATE that raises how many pods a Job of
// a ReplicatedJob with templates runs at once: JobSet's ElasticJobSet gate lets parallelism and
// completions change on a running JobSet, and JobSet then patches the running Jobs, whose pods
// past the limit would wait forever for their claim. A ReplicatedJob that does not grow is not
// refused again (it was admitted as it is).
func ScaledPastSharers(oldJS, newJS *jobsetv1alpha2.JobSet) field.ErrorList {
	var errs field.ErrorList
	for i := range newJS.Spec.ReplicatedJobs {
		rj := &newJS.Spec.ReplicatedJobs[i]
		value, ok := rj.Template.Annotations[contract.TemplatesAnnotationKey]
		if !ok {
			continue
		}
		j := slices.IndexFunc(oldJS.Spec.ReplicatedJobs, func(o jobsetv1alpha2.ReplicatedJob) bool { return o.Name == rj.Name })
		if j >= 0 && jobsets.PodsPerJob(rj) <= jobsets.PodsPerJob(&oldJS.Spec.ReplicatedJobs[j]) {
			continue
		}
		path := contract.ReplicatedJobAnnotationPath(i, contract.TemplatesAnnotationKey)
		templates, parseErrs := contract.ParseResourceClaimTemplates(value, path)
		if len(parseErrs) > 0 {
			continue // refused as immutable, or admitted without the webhook: not this check's to judge
		}
		if err := TooManySharers(newJS, rj, len(templates), path); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}
