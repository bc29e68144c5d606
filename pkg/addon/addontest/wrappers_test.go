package addontest

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
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

// TestWrapperMethods: each method sets what its comment says, and nothing else.
func TestWrapperMethods(t *testing.T) {
	js := JobSet("ns", "train").UID("js-uid").ReplicatedJobs(ReplicatedJob("w")).Obj()
	cases := map[string]struct {
		got, want any
	}{
		"JobSet Annotations": {
			got:  JobSet("ns", "a").Annotation("x", "0").Annotations(map[string]string{"y": "1", "z": "2"}).Obj().Annotations,
			want: map[string]string{"x": "0", "y": "1", "z": "2"},
		},
		"JobSet Annotations nil": {got: JobSet("ns", "a").Annotations(nil).Obj().Annotations, want: map[string]string(nil)},
		"JobSet InOrder": {
			got:  JobSet("ns", "a").InOrder().Obj().Annotations,
			want: map[string]string{contract.ExecutionPolicyAnnotationKey: "InOrder"},
		},
		"JobSet VolumeClaimsPolicies and VolumeClaimsAdmitted": {
			got: JobSet("ns", "a").VolumeClaimsPolicies("[]").VolumeClaimsAdmitted().Obj().Annotations,
			want: map[string]string{
				contract.PoliciesAnnotationKey: "[]", contract.VolumeClaimsAdmittedAnnotationKey: contract.EnabledValue,
			},
		},
		"JobSet StartupPolicy": {
			got:  JobSet("ns", "a").StartupPolicy(jobsetv1alpha2.InOrder).Obj().Spec.StartupPolicy,
			want: &jobsetv1alpha2.StartupPolicy{StartupPolicyOrder: jobsetv1alpha2.InOrder},
		},
		"JobSet OwnedByTrainJob": {
			got: JobSet("ns", "a").OwnedByTrainJob("tj").Obj().OwnerReferences,
			want: []metav1.OwnerReference{{
				APIVersion: "trainer.kubeflow.org/v1alpha1", Kind: "TrainJob", Name: "tj", UID: "u", Controller: ptr.To(true),
			}},
		},
		"ReplicatedJob BackoffLimit": {
			got:  ReplicatedJob("b").BackoffLimit(ptr.To[int32](2)).Obj().Template.Spec.BackoffLimit,
			want: ptr.To[int32](2),
		},
		"ReplicatedJob BackoffLimit nil": {got: ReplicatedJob("b").BackoffLimit(nil).Obj().Template.Spec.BackoffLimit, want: (*int32)(nil)},
		"ReplicatedJob DependsOnStatus": {
			got: ReplicatedJob("b").DependsOn("a").DependsOnStatus("c", jobsetv1alpha2.DependencyReady).Obj().DependsOn,
			want: []jobsetv1alpha2.DependsOn{
				{Name: "a", Status: jobsetv1alpha2.DependencyComplete}, {Name: "c", Status: jobsetv1alpha2.DependencyReady},
			},
		},
		"ReplicatedJob InitContainers": {
			got:  ReplicatedJob("b").InitContainers("x").InitContainers("init", "setup").Obj().Template.Spec.Template.Spec.InitContainers,
			want: []corev1.Container{{Name: "init", Image: "busybox"}, {Name: "setup", Image: "busybox"}},
		},
		"ReplicatedJob DependsOnAnnotation": {
			got:  ReplicatedJob("b").DependsOnAnnotation("- name: a\n").Obj().Template.Annotations,
			want: map[string]string{contract.DependsOnAnnotationKey: "- name: a\n"},
		},
		"Job Label": {
			got:  Job(js, "w", 0).Label("x", "y").Obj().Labels["x"],
			want: "y",
		},
		"Job ControlledBy": {
			got: Job(js, "w", 0).ControlledBy(js).Obj().OwnerReferences,
			want: []metav1.OwnerReference{{
				APIVersion: "jobset.x-k8s.io/v1alpha2", Kind: "JobSet", Name: "train", UID: "js-uid", Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
			}},
		},
		"Job Succeeded": {got: Job(js, "w", 0).Succeeded(2).Obj().Status, want: batchv1.JobStatus{Succeeded: 2}},
		"Job Complete": {
			got:  Job(js, "w", 0).Complete().Obj().Status,
			want: batchv1.JobStatus{Succeeded: 1, Conditions: []batchv1.JobCondition{{Type: batchv1.JobComplete, Status: corev1.ConditionTrue}}},
		},
		"Job Complete of 4 completions": {
			got:  Job(JobSet("ns", "train").ReplicatedJobs(ReplicatedJob("w").Pods(4)).Obj(), "w", 0).Complete().Obj().Status.Succeeded,
			want: int32(4),
		},
		"Pod UID": {got: Pod("ns", "train", "w", 0, 0).UID("p").Obj().UID, want: types.UID("p")},
		"Pod Attempt": {
			got:  Pod("ns", "train", "w", 0, 0).Attempt(2).Obj().Labels[contract.RestartAttemptLabelKey],
			want: "2",
		},
	}
	for name, tc := range cases {
		if diff := cmp.Diff(tc.want, tc.got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", name, diff)
		}
	}
}
