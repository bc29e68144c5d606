package kindbed

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

// RendezvousPort is the port rank 0 of the rendezvous program listens on.
const RendezvousPort = 7777

// Rendezvous is an Indexed ReplicatedJob name of JobSet jobset, of replicas Jobs of pods pods
// each, whose one container "work" runs the rendezvous program (e2e/kindbed/images/rendezvous):
// rank JOB_INDEX*pods+JOB_COMPLETION_INDEX of replicas*pods, rank 0 (the first pod of the first
// Job) reached at its JobSet DNS name <jobset>-<name>-0-0.<jobset> (JobSet's headless Service,
// named after the JobSet), every rank giving up after timeout. The pods spread evenly over the
// nodes that take them (a topology spread on the hostname; tainted nodes left out), so that
// with two workers and more than one pod the rendezvous crosses nodes.
func Rendezvous(jobset, name string, replicas, pods int32, timeout time.Duration) jobsetv1alpha2.ReplicatedJob {
	rj := addontest.ReplicatedJob(name).Replicas(replicas).Pods(pods)
	spec := rj.PodSpec()
	spec.TerminationGracePeriodSeconds = ptr.To[int64](1)
	spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{
		MaxSkew: 1, TopologyKey: corev1.LabelHostname, WhenUnsatisfiable: corev1.DoNotSchedule,
		LabelSelector:    &metav1.LabelSelector{MatchLabels: map[string]string{contract.JobSetNameLabelKey: jobset}},
		MatchLabelKeys:   []string{contract.RestartAttemptLabelKey},
		NodeTaintsPolicy: ptr.To(corev1.NodeInclusionPolicyHonor),
	}}
	ctr := &spec.Containers[0]
	ctr.Name, ctr.Image, ctr.ImagePullPolicy = "work", RendezvousImage, corev1.PullNever
	ctr.TerminationMessagePolicy = corev1.TerminationMessageFallbackToLogsOnError
	ctr.Args = []string{
		fmt.Sprintf("-coordinator=%s-%s-0-0.%s:%d", jobset, name, jobset, RendezvousPort),
		fmt.Sprintf("-world=%d", replicas*pods), fmt.Sprintf("-pods-per-job=%d", pods), "-timeout=" + timeout.String(),
	}
	ctr.Env = []corev1.EnvVar{FieldEnv("JOB_INDEX", "metadata.labels['"+contract.JobIndexLabelKey+"']")}
	return *rj.Obj()
}
