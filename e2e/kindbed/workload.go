package kindbed

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/pkg/addon/addontest"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// JobSet is a JobSet of the given ReplicatedJobs with annotations, that fails at once when a
// Job fails unless restarts is above 0.
func JobSet(ns, name string, annotations map[string]string, restarts int32, rjobs ...jobsetv1alpha2.ReplicatedJob) *jobsetv1alpha2.JobSet {
	js := addontest.JobSet(ns, name).MaxRestarts(restarts).Obj()
	js.Annotations, js.Spec.ReplicatedJobs = annotations, rjobs
	return js
}

// ReplicatedJob is an Indexed ReplicatedJob of replicas Jobs of pods pods each, whose one
// container "work" runs script in the workload image (busybox) with mounts, and sees its place
// in the JobSet as $ME (<rjob>-<job index>-<completion index>) and the JobSet's restart attempt
// as $ATTEMPT.
func ReplicatedJob(name string, replicas, pods int32, script string, mounts ...string) jobsetv1alpha2.ReplicatedJob {
	rj := addontest.ReplicatedJob(name).Replicas(replicas).Pods(pods).Mount(mounts...)
	spec := rj.PodSpec()
	spec.TerminationGracePeriodSeconds = ptr.To[int64](1)
	ctr := &spec.Containers[0]
	ctr.Name, ctr.Image, ctr.ImagePullPolicy = "work", WorkloadImage, corev1.PullNever
	ctr.Command = []string{"/bin/sh", "-c", `ME="$RJOB-$JOB_INDEX-$JOB_COMPLETION_INDEX"; ` + script}
	ctr.Env = []corev1.EnvVar{
		{Name: "RJOB", Value: name},
		FieldEnv("JOB_INDEX", "metadata.labels['"+contract.JobIndexLabelKey+"']"),
		FieldEnv("ATTEMPT", "metadata.annotations['"+contract.RestartAttemptAnnotationKey+"']"),
	}
	return *rj.Obj()
}

// FieldEnv is the environment variable name set from the pod's field path.
func FieldEnv(name, path string) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: path}}}
}
