package kind_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/e2e/framework"
	"github.com/jobset-addons/jobset-addons/e2e/kindbed"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// jobSet is a JobSet of the given ReplicatedJobs with annotations, that fails at once when a
// Job fails unless restarts is above 0.
func jobSet(ns, name string, annotations map[string]string, restarts int32, rjobs ...jobsetv1alpha2.ReplicatedJob) *jobsetv1alpha2.JobSet {
	return &jobsetv1alpha2.JobSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: annotations},
		Spec: jobsetv1alpha2.JobSetSpec{
			ReplicatedJobs: rjobs,
			FailurePolicy:  &jobsetv1alpha2.FailurePolicy{MaxRestarts: restarts},
		},
	}
}

// replicatedJob is an Indexed ReplicatedJob of replicas Jobs of pods pods each, whose one
// container runs script in busybox with mounts, and sees its place in the JobSet as $ME
// (<rjob>-<job index>-<completion index>) and the JobSet's restart attempt as $ATTEMPT.
func replicatedJob(name string, replicas, pods int32, script string, mounts ...string) jobsetv1alpha2.ReplicatedJob {
	ctr := corev1.Container{
		Name: "work", Image: kindbed.WorkloadImage, ImagePullPolicy: corev1.PullNever,
		Command: []string{"/bin/sh", "-c", `ME="$RJOB-$JOB_INDEX-$JOB_COMPLETION_INDEX"; ` + script},
		Env: []corev1.EnvVar{
			{Name: "RJOB", Value: name},
			fieldEnv("JOB_INDEX", "metadata.labels['"+contract.JobIndexLabelKey+"']"),
			fieldEnv("ATTEMPT", "metadata.annotations['"+contract.RestartAttemptAnnotationKey+"']"),
		},
		Resources: corev1.ResourceRequirements{},
	}
	for _, m := range mounts {
		ctr.VolumeMounts = append(ctr.VolumeMounts, corev1.VolumeMount{Name: m, MountPath: "/" + m})
	}
	return jobsetv1alpha2.ReplicatedJob{
		Name: name, Replicas: replicas,
		Template: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{
			Parallelism: ptr.To(pods), Completions: ptr.To(pods), CompletionMode: ptr.To(batchv1.IndexedCompletion),
			BackoffLimit: ptr.To[int32](0),
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy:                 corev1.RestartPolicyNever,
				TerminationGracePeriodSeconds: ptr.To[int64](1),
				Containers:                    []corev1.Container{ctr},
			}},
		}},
	}
}

func fieldEnv(name, path string) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: path}}}
}

// pods lists the JobSet's pods, sorted by name.
func pods(ctx context.Context, t *testing.T, c client.Client, js *jobsetv1alpha2.JobSet, extra ...client.ListOption) []corev1.Pod {
	t.Helper()
	var l corev1.PodList
	opts := append([]client.ListOption{client.InNamespace(js.Namespace), client.MatchingLabels{contract.JobSetNameLabelKey: js.Name}}, extra...)
	if err := c.List(ctx, &l, opts...); err != nil {
		t.Fatalf("listing pods of %s: %v", js.Name, err)
	}
	sort.Slice(l.Items, func(i, j int) bool { return l.Items[i].Name < l.Items[j].Name })
	return l.Items
}

// logs returns the log of pod's container "work".
func logs(ctx context.Context, t *testing.T, p *corev1.Pod) string {
	t.Helper()
	out, err := kb.Kubectl(ctx, nil, "-n", p.Namespace, "logs", p.Name, "-c", "work")
	if err != nil {
		t.Fatalf("logs of %s: %v", p.Name, err)
	}
	return strings.TrimSpace(string(out))
}

// waitPods waits until n pods of js match ok.
func waitPods(ctx context.Context, t *testing.T, c client.Client, js *jobsetv1alpha2.JobSet, n int, what string, timeout time.Duration, ok func(*corev1.Pod) bool) []corev1.Pod {
	t.Helper()
	var got []corev1.Pod
	framework.Eventually(ctx, t, timeout, fmt.Sprintf("%d pods of %s %s", n, js.Name, what), func(ctx context.Context) (bool, string, error) {
		got = got[:0]
		var seen []string
		for _, p := range pods(ctx, t, c, js) {
			seen = append(seen, p.Name+"="+string(p.Status.Phase))
			if ok(&p) {
				got = append(got, p)
			}
		}
		return len(got) == n, strings.Join(seen, " "), nil
	})
	return got
}

func running(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil
}
