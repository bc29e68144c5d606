package addontest

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

// JobWrapper builds a Job as upstream JobSet creates it for a ReplicatedJob.
type JobWrapper struct{ batchv1.Job }

// Job is Job index of the ReplicatedJob rj of js, in restart attempt 0, with JobSet's labels
// and annotations and js's pod template for rj (when js has it).
func Job(js *jobsetv1alpha2.JobSet, rj string, index int) *JobWrapper {
	i := strconv.Itoa(index)
	j := &JobWrapper{batchv1.Job{ObjectMeta: metav1.ObjectMeta{
		Namespace: js.Namespace,
		Name:      js.Name + "-" + rj + "-" + i,
		Labels: map[string]string{
			contract.JobSetNameLabelKey:        js.Name,
			contract.ReplicatedJobNameLabelKey: rj,
			contract.JobIndexLabelKey:          i,
			contract.RestartAttemptLabelKey:    "0",
		},
		Annotations: map[string]string{contract.RestartAttemptAnnotationKey: "0"},
	}}}
	for _, r := range js.Spec.ReplicatedJobs {
		if r.Name == rj {
			j.Spec = *r.Template.Spec.DeepCopy()
			for k, v := range r.Template.Annotations {
				j.Annotations[k] = v
			}
		}
	}
	return j
}

// Obj is the Job built.
func (w *JobWrapper) Obj() *batchv1.Job { return &w.Job }

// Name sets the Job's name.
func (w *JobWrapper) Name(name string) *JobWrapper {
	w.Job.Name = name
	return w
}

// UID sets metadata.uid.
func (w *JobWrapper) UID(uid string) *JobWrapper {
	w.Job.UID = types.UID(uid)
	return w
}

// Attempt sets the restart attempt the Job belongs to (label and annotation).
func (w *JobWrapper) Attempt(n int) *JobWrapper {
	a := strconv.Itoa(n)
	w.Labels[contract.RestartAttemptLabelKey] = a
	w.Annotations[contract.RestartAttemptAnnotationKey] = a
	return w
}

// Annotation sets an annotation of the Job.
func (w *JobWrapper) Annotation(key, value string) *JobWrapper {
	w.Annotations = set(w.Annotations, key, value)
	return w
}

// Label sets a label of the Job.
func (w *JobWrapper) Label(key, value string) *JobWrapper {
	w.Labels = set(w.Labels, key, value)
	return w
}

// ControlledBy makes js the Job's controller, as upstream JobSet does.
func (w *JobWrapper) ControlledBy(js *jobsetv1alpha2.JobSet) *JobWrapper {
	w.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(js, jobsetv1alpha2.GroupVersion.WithKind("JobSet"))}
	return w
}

// Finished adds the condition t (JobComplete or JobFailed), True.
func (w *JobWrapper) Finished(t batchv1.JobConditionType) *JobWrapper {
	w.Status.Conditions = append(w.Status.Conditions, batchv1.JobCondition{Type: t, Status: corev1.ConditionTrue})
	return w
}

// Complete adds the condition JobComplete, True, with the pods that succeeded to complete it
// (completions; 1 when unset).
func (w *JobWrapper) Complete() *JobWrapper {
	return w.Succeeded(ptr.Deref(w.Spec.Completions, 1)).Finished(batchv1.JobComplete)
}

// Ready sets status.ready.
func (w *JobWrapper) Ready(n int32) *JobWrapper {
	w.Status.Ready = ptr.To(n)
	return w
}

// Succeeded sets status.succeeded, the pods that succeeded.
func (w *JobWrapper) Succeeded(n int32) *JobWrapper {
	w.Status.Succeeded = n
	return w
}

// PodWrapper builds a Pod as JobSet and the Job controller create it.
type PodWrapper struct{ corev1.Pod }

// Pod is a pod of JobSet jobSet in namespace ns, of ReplicatedJob rj, with the given Job and
// completion indexes: JobSet's labels, the completion index annotation, one container "main".
func Pod(ns, jobSet, rj string, jobIndex, completionIndex int) *PodWrapper {
	ji, ci := strconv.Itoa(jobIndex), strconv.Itoa(completionIndex)
	return &PodWrapper{corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName: jobSet + "-" + rj + "-" + ji + "-" + ci + "-",
			Namespace:    ns,
			Labels: map[string]string{
				contract.JobSetNameLabelKey:        jobSet,
				contract.ReplicatedJobNameLabelKey: rj,
				contract.JobIndexLabelKey:          ji,
			},
			Annotations: map[string]string{contract.JobCompletionIndexAnnotationKey: ci},
		},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "busybox"}}},
	}}
}

// Obj is the Pod built.
func (w *PodWrapper) Obj() *corev1.Pod { return &w.Pod }

// Name sets the pod's name and clears generateName.
func (w *PodWrapper) Name(name string) *PodWrapper {
	w.Pod.Name, w.GenerateName = name, ""
	return w
}

// UID sets metadata.uid.
func (w *PodWrapper) UID(uid string) *PodWrapper {
	w.Pod.UID = types.UID(uid)
	return w
}

// Attempt sets the restart attempt the pod belongs to (the label JobSet gives its pods).
func (w *PodWrapper) Attempt(n int) *PodWrapper {
	return w.Label(contract.RestartAttemptLabelKey, strconv.Itoa(n))
}

// Label sets a label of the pod.
func (w *PodWrapper) Label(key, value string) *PodWrapper {
	w.Labels = set(w.Labels, key, value)
	return w
}

// Annotation sets an annotation of the pod.
func (w *PodWrapper) Annotation(key, value string) *PodWrapper {
	w.Annotations = set(w.Annotations, key, value)
	return w
}

// WithoutLabel removes a label of the pod.
func (w *PodWrapper) WithoutLabel(key string) *PodWrapper {
	delete(w.Labels, key)
	return w
}

// WithoutAnnotation removes an annotation of the pod.
func (w *PodWrapper) WithoutAnnotation(key string) *PodWrapper {
	delete(w.Annotations, key)
	return w
}

// Volume adds a volume to the pod.
func (w *PodWrapper) Volume(v corev1.Volume) *PodWrapper {
	w.Spec.Volumes = append(w.Spec.Volumes, v)
	return w
}

// Gate adds the scheduling gate name.
func (w *PodWrapper) Gate(name string) *PodWrapper {
	w.Spec.SchedulingGates = append(w.Spec.SchedulingGates, corev1.PodSchedulingGate{Name: name})
	return w
}

// ControlledBy makes the Job j the pod's controller, as the Job controller does.
func (w *PodWrapper) ControlledBy(j *batchv1.Job) *PodWrapper {
	w.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(j, batchv1.SchemeGroupVersion.WithKind("Job"))}
	return w
}
