package addontest

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

func TestWrappers(t *testing.T) {
	js := JobSet("ns", "train").Annotate("a", "1", "b", "2").ReplicatedJobs(
		ReplicatedJob("workers").Replicas(2).Pods(4).Requests("1", "").Mount("data").
			JobAnnotation(contract.TemplatesAnnotationKey, "[]"),
	).Obj()
	want := &jobsetv1alpha2.JobSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "train", Annotations: map[string]string{"a": "1", "b": "2"}},
		Spec: jobsetv1alpha2.JobSetSpec{ReplicatedJobs: []jobsetv1alpha2.ReplicatedJob{{
			Name: "workers", Replicas: 2,
			Template: batchv1.JobTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{contract.TemplatesAnnotationKey: "[]"}},
				Spec: batchv1.JobSpec{
					Parallelism: ptr.To[int32](4), Completions: ptr.To[int32](4),
					CompletionMode: ptr.To(batchv1.IndexedCompletion), BackoffLimit: ptr.To[int32](0),
					Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
						RestartPolicy: corev1.RestartPolicyNever,
						Containers: []corev1.Container{{
							Name: "main", Image: "busybox",
							Resources:    corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}},
							VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}},
						}},
					}},
				},
			},
		}}},
	}
	if diff := cmp.Diff(want, js); diff != "" {
		t.Errorf("JobSet (-want +got):\n%s", diff)
	}

	job := Job(js, "workers", 1).Attempt(2).Finished(batchv1.JobComplete).Obj()
	if diff := cmp.Diff(map[string]string{
		contract.JobSetNameLabelKey: "train", contract.ReplicatedJobNameLabelKey: "workers",
		contract.JobIndexLabelKey: "1", contract.RestartAttemptLabelKey: "2",
	}, job.Labels); diff != "" {
		t.Errorf("Job labels (-want +got):\n%s", diff)
	}
	if job.Name != "train-workers-1" || job.Annotations[contract.TemplatesAnnotationKey] != "[]" ||
		job.Annotations[contract.RestartAttemptAnnotationKey] != "2" || *job.Spec.Parallelism != 4 {
		t.Errorf("Job = %s %v parallelism %d, want train-workers-1 with the template's annotations, attempt 2, parallelism 4",
			job.Name, job.Annotations, *job.Spec.Parallelism)
	}

	pod := Pod("ns", "train", "workers", 1, 3).Gate("g").WithoutLabel(contract.JobIndexLabelKey).Obj()
	if pod.GenerateName != "train-workers-1-3-" || pod.Annotations[contract.JobCompletionIndexAnnotationKey] != "3" ||
		len(pod.Labels) != 2 || pod.Spec.SchedulingGates[0].Name != "g" {
		t.Errorf("Pod = %+v", pod.ObjectMeta)
	}

	base := JobSet("ns", "a")
	variant := base.Clone().Suspend(true)
	if base.Spec.Suspend != nil || !*variant.Spec.Suspend {
		t.Errorf("Clone shares state with its base")
	}
}
