// Package testutil builds the JobSets, Jobs and Pods the sequencer's unit tests read.
package testutil

import (
	"strconv"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// JobSetWrapper builds a JobSet.
type JobSetWrapper struct{ jobsetv1alpha2.JobSet }

// JobSet is a JobSet in namespace "ns" with no ReplicatedJobs.
func JobSet(name string) *JobSetWrapper {
	return &JobSetWrapper{jobsetv1alpha2.JobSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(name + "-uid")}}}
}

// Obj returns the JobSet.
func (w *JobSetWrapper) Obj() *jobsetv1alpha2.JobSet { return &w.JobSet }

// Annotation sets a JobSet annotation.
func (w *JobSetWrapper) Annotation(key, value string) *JobSetWrapper {
	if w.Annotations == nil {
		w.Annotations = map[string]string{}
	}
	w.Annotations[key] = value
	return w
}

// InOrder sets execution-policy InOrder.
func (w *JobSetWrapper) InOrder() *JobSetWrapper {
	return w.Annotation(contract.ExecutionPolicyAnnotationKey, string(contract.ExecutionPolicyInOrder))
}

// ReplicatedJob adds a ReplicatedJob of replicas Jobs of one pod each.
func (w *JobSetWrapper) ReplicatedJob(name string, replicas int32) *JobSetWrapper {
	w.Spec.ReplicatedJobs = append(w.Spec.ReplicatedJobs, jobsetv1alpha2.ReplicatedJob{
		Name: name, Replicas: replicas,
		Template: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{
			Parallelism: ptr.To[int32](1), Completions: ptr.To[int32](1),
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "busybox"}}}},
		}},
	})
	return w
}

// DependsOn sets the depends-on annotation of the last ReplicatedJob.
func (w *JobSetWrapper) DependsOn(value string) *JobSetWrapper {
	rj := &w.Spec.ReplicatedJobs[len(w.Spec.ReplicatedJobs)-1]
	if rj.Template.Annotations == nil {
		rj.Template.Annotations = map[string]string{}
	}
	rj.Template.Annotations[contract.DependsOnAnnotationKey] = value
	return w
}

// UpstreamDependsOn sets upstream dependsOn of the last ReplicatedJob.
func (w *JobSetWrapper) UpstreamDependsOn(name string, status jobsetv1alpha2.DependsOnStatus) *JobSetWrapper {
	rj := &w.Spec.ReplicatedJobs[len(w.Spec.ReplicatedJobs)-1]
	rj.DependsOn = append(rj.DependsOn, jobsetv1alpha2.DependsOn{Name: name, Status: status})
	return w
}

// StartupInOrder sets upstream startupPolicy InOrder.
func (w *JobSetWrapper) StartupInOrder() *JobSetWrapper {
	w.Spec.StartupPolicy = &jobsetv1alpha2.StartupPolicy{StartupPolicyOrder: jobsetv1alpha2.InOrder}
	return w
}

// Restarts sets status.restarts.
func (w *JobSetWrapper) Restarts(n int32) *JobSetWrapper {
	w.Status.Restarts = n
	return w
}

// Suspend sets spec.suspend.
func (w *JobSetWrapper) Suspend(s bool) *JobSetWrapper {
	w.Spec.Suspend = ptr.To(s)
	return w
}

// JobWrapper builds a Job of a JobSet.
type JobWrapper struct{ batchv1.Job }

// Job is Job index of ReplicatedJob rj of the JobSet js, in restart attempt 0, with one pod.
func Job(js *jobsetv1alpha2.JobSet, rj string, index int) *JobWrapper {
	return &JobWrapper{batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: js.Namespace, Name: js.Name + "-" + rj + "-" + strconv.Itoa(index),
			Labels: map[string]string{
				contract.JobSetNameLabelKey: js.Name, contract.ReplicatedJobNameLabelKey: rj,
				contract.RestartAttemptLabelKey: "0",
			},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "jobset.x-k8s.io/v1alpha2", Kind: "JobSet", Name: js.Name, UID: js.UID, Controller: ptr.To(true)}},
		},
		Spec: batchv1.JobSpec{Parallelism: ptr.To[int32](1), Completions: ptr.To[int32](1)},
	}}
}

// Obj returns the Job.
func (w *JobWrapper) Obj() *batchv1.Job { return &w.Job }

// Attempt sets the restart-attempt label.
func (w *JobWrapper) Attempt(n int) *JobWrapper {
	w.Labels[contract.RestartAttemptLabelKey] = strconv.Itoa(n)
	w.Name += "-r" + strconv.Itoa(n)
	return w
}

// Complete marks the Job Complete.
func (w *JobWrapper) Complete() *JobWrapper {
	w.Status.Succeeded = 1
	w.Status.Conditions = append(w.Status.Conditions, batchv1.JobCondition{Type: batchv1.JobComplete, Status: corev1.ConditionTrue})
	return w
}

// Failed marks the Job Failed.
func (w *JobWrapper) Failed() *JobWrapper {
	w.Status.Conditions = append(w.Status.Conditions, batchv1.JobCondition{Type: batchv1.JobFailed, Status: corev1.ConditionTrue})
	return w
}

// Ready sets status.ready.
func (w *JobWrapper) Ready(n int32) *JobWrapper {
	w.Status.Ready = ptr.To(n)
	return w
}

// Pod is a gated pod of ReplicatedJob rj of js, in restart attempt attempt.
func Pod(js *jobsetv1alpha2.JobSet, rj string, index, attempt int) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: js.Namespace, Name: js.Name + "-" + rj + "-" + strconv.Itoa(index) + "-r" + strconv.Itoa(attempt),
			UID: types.UID(js.Name + "-" + rj + "-" + strconv.Itoa(index) + "-r" + strconv.Itoa(attempt)),
			Labels: map[string]string{
				contract.JobSetNameLabelKey: js.Name, contract.ReplicatedJobNameLabelKey: rj,
				contract.RestartAttemptLabelKey: strconv.Itoa(attempt), contract.SequencerGatedLabelKey: contract.EnabledValue,
			},
		},
		Spec: corev1.PodSpec{
			SchedulingGates: []corev1.PodSchedulingGate{{Name: "other.example.com/gate"}, {Name: contract.SequencerSchedulingGateValue}},
			Containers:      []corev1.Container{{Name: "main", Image: "busybox"}},
		},
	}
}
