package addontest

import (
	"strconv"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// The wrappers below build the objects every add-on's tests make (unit tests and e2e alike):
// each embeds the real object, is changed by chained methods, and ends in Obj(), as upstream
// JobSet's pkg/util/testing and Kueue's test wrappers do. They start from what a user writes,
// with nothing an add-on's webhook would add.

// JobSetWrapper builds a JobSet.
type JobSetWrapper struct{ jobsetv1alpha2.JobSet }

// JobSet is a JobSet named name in namespace ns, without ReplicatedJobs.
func JobSet(ns, name string) *JobSetWrapper {
	return &JobSetWrapper{jobsetv1alpha2.JobSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}}
}

// Obj is the JobSet built.
func (w *JobSetWrapper) Obj() *jobsetv1alpha2.JobSet { return &w.JobSet }

// Clone is an independent copy of the wrapper, to build variants from one base.
func (w *JobSetWrapper) Clone() *JobSetWrapper { return &JobSetWrapper{*w.DeepCopy()} }

// GenerateName sets metadata.generateName and clears metadata.name, as a mutating webhook sees
// such a JobSet.
func (w *JobSetWrapper) GenerateName(prefix string) *JobSetWrapper {
	w.JobSet.GenerateName, w.JobSet.Name = prefix, ""
	return w
}

// UID sets metadata.uid.
func (w *JobSetWrapper) UID(uid string) *JobSetWrapper {
	w.JobSet.UID = types.UID(uid)
	return w
}

// Annotation sets an annotation of the JobSet.
func (w *JobSetWrapper) Annotation(key, value string) *JobSetWrapper {
	w.JobSet.Annotations = set(w.JobSet.Annotations, key, value)
	return w
}

// Annotate sets the annotations of kv: key, value, key, value...
func (w *JobSetWrapper) Annotate(kv ...string) *JobSetWrapper {
	for i := 0; i+1 < len(kv); i += 2 {
		w.Annotation(kv[i], kv[i+1])
	}
	return w
}

// Annotations sets every annotation of m (a test table's annotations; nil sets none).
func (w *JobSetWrapper) Annotations(m map[string]string) *JobSetWrapper {
	for k, v := range m {
		w.Annotation(k, v)
	}
	return w
}

// InOrder sets the sequencer's execution-policy InOrder: each ReplicatedJob waits for the one
// before it.
func (w *JobSetWrapper) InOrder() *JobSetWrapper {
	return w.Annotation(contract.ExecutionPolicyAnnotationKey, string(contract.ExecutionPolicyInOrder))
}

// VolumeClaimsPolicies sets volumeclaims' policies annotation: value is its YAML list of
// policies.
func (w *JobSetWrapper) VolumeClaimsPolicies(value string) *JobSetWrapper {
	return w.Annotation(contract.PoliciesAnnotationKey, value)
}

// VolumeClaimsAdmitted sets the marker volumeclaims' mutating webhook leaves on a JobSet it
// injected.
func (w *JobSetWrapper) VolumeClaimsAdmitted() *JobSetWrapper {
	return w.Annotation(contract.VolumeClaimsAdmittedAnnotationKey, contract.EnabledValue)
}

// Label sets a label of the JobSet.
func (w *JobSetWrapper) Label(key, value string) *JobSetWrapper {
	w.Labels = set(w.Labels, key, value)
	return w
}

// ReplicatedJobs appends the ReplicatedJobs built by rjs.
func (w *JobSetWrapper) ReplicatedJobs(rjs ...*ReplicatedJobWrapper) *JobSetWrapper {
	for _, rj := range rjs {
		w.Spec.ReplicatedJobs = append(w.Spec.ReplicatedJobs, *rj.Obj())
	}
	return w
}

// Suspend sets spec.suspend.
func (w *JobSetWrapper) Suspend(s bool) *JobSetWrapper {
	w.Spec.Suspend = ptr.To(s)
	return w
}

// MaxRestarts sets the failure policy's maxRestarts.
func (w *JobSetWrapper) MaxRestarts(n int32) *JobSetWrapper {
	w.Spec.FailurePolicy = &jobsetv1alpha2.FailurePolicy{MaxRestarts: n}
	return w
}

// ManagedBy sets spec.managedBy.
func (w *JobSetWrapper) ManagedBy(controller string) *JobSetWrapper {
	w.Spec.ManagedBy = ptr.To(controller)
	return w
}

// StartupPolicy sets upstream JobSet's spec.startupPolicy to the order given.
func (w *JobSetWrapper) StartupPolicy(order jobsetv1alpha2.StartupPolicyOptions) *JobSetWrapper {
	w.Spec.StartupPolicy = &jobsetv1alpha2.StartupPolicy{StartupPolicyOrder: order}
	return w
}

// OwnedByTrainJob makes the Kubeflow Trainer TrainJob name the JobSet's controller (UID "u"), as
// Trainer creates the JobSet of a TrainJob.
func (w *JobSetWrapper) OwnedByTrainJob(name string) *JobSetWrapper {
	w.OwnerReferences = []metav1.OwnerReference{{
		APIVersion: "trainer.kubeflow.org/v1alpha1", Kind: "TrainJob", Name: name, UID: "u", Controller: ptr.To(true),
	}}
	return w
}

// Restarts sets status.restarts, the restart attempt JobSet is in.
func (w *JobSetWrapper) Restarts(n int32) *JobSetWrapper {
	w.Status.Restarts = n
	return w
}

// Condition adds a status condition of the given type, True.
func (w *JobSetWrapper) Condition(t jobsetv1alpha2.JobSetConditionType) *JobSetWrapper {
	w.Status.Conditions = append(w.Status.Conditions, metav1.Condition{Type: string(t), Status: metav1.ConditionTrue, Reason: string(t)})
	return w
}

// PodTemplate is the pod template of the ReplicatedJob at index i, to edit in place.
func (w *JobSetWrapper) PodTemplate(i int) *corev1.PodTemplateSpec {
	return &w.Spec.ReplicatedJobs[i].Template.Spec.Template
}

// ReplicatedJobWrapper builds a ReplicatedJob. It starts with one replica of one Indexed pod
// (what upstream JobSet's own mutating webhook defaults the completion mode to, before any
// validating webhook runs), no retries, RestartPolicy Never, and one container "main" of
// busybox without mounts or requests.
type ReplicatedJobWrapper struct{ jobsetv1alpha2.ReplicatedJob }

// ReplicatedJob is a ReplicatedJob named name.
func ReplicatedJob(name string) *ReplicatedJobWrapper {
	return &ReplicatedJobWrapper{jobsetv1alpha2.ReplicatedJob{
		Name:     name,
		Replicas: 1,
		Template: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{
			CompletionMode: ptr.To(batchv1.IndexedCompletion),
			BackoffLimit:   ptr.To[int32](0),
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever,
				Containers:    []corev1.Container{{Name: "main", Image: "busybox"}},
			}},
		}},
	}}
}

// Obj is the ReplicatedJob built.
func (w *ReplicatedJobWrapper) Obj() *jobsetv1alpha2.ReplicatedJob { return &w.ReplicatedJob }

// Replicas sets the number of Jobs.
func (w *ReplicatedJobWrapper) Replicas(n int32) *ReplicatedJobWrapper {
	w.ReplicatedJob.Replicas = n
	return w
}

// Pods sets parallelism and completions to n: n pods at once.
func (w *ReplicatedJobWrapper) Pods(n int32) *ReplicatedJobWrapper {
	return w.Parallelism(n).Completions(n)
}

// Parallelism sets the Job template's parallelism.
func (w *ReplicatedJobWrapper) Parallelism(n int32) *ReplicatedJobWrapper {
	w.Template.Spec.Parallelism = ptr.To(n)
	return w
}

// Completions sets the Job template's completions.
func (w *ReplicatedJobWrapper) Completions(n int32) *ReplicatedJobWrapper {
	w.Template.Spec.Completions = ptr.To(n)
	return w
}

// CompletionMode sets the completion mode; nil leaves it unset.
func (w *ReplicatedJobWrapper) CompletionMode(m *batchv1.CompletionMode) *ReplicatedJobWrapper {
	w.Template.Spec.CompletionMode = m
	return w
}

// BackoffLimit sets the Job template's backoffLimit; nil leaves it unset (the Job API's default
// of 6 retries), as a user who does not write it gets.
func (w *ReplicatedJobWrapper) BackoffLimit(n *int32) *ReplicatedJobWrapper {
	w.Template.Spec.BackoffLimit = n
	return w
}

// DependsOn adds upstream JobSet's dependsOn on name, with status Complete.
func (w *ReplicatedJobWrapper) DependsOn(name string) *ReplicatedJobWrapper {
	return w.DependsOnStatus(name, jobsetv1alpha2.DependencyComplete)
}

// DependsOnStatus adds upstream JobSet's dependsOn on name, with the status given.
func (w *ReplicatedJobWrapper) DependsOnStatus(name string, status jobsetv1alpha2.DependsOnStatus) *ReplicatedJobWrapper {
	w.ReplicatedJob.DependsOn = append(w.ReplicatedJob.DependsOn, jobsetv1alpha2.DependsOn{Name: name, Status: status})
	return w
}

// DependsOnAnnotation sets the sequencer's depends-on annotation of the Job template: value is
// its YAML list of predecessors.
func (w *ReplicatedJobWrapper) DependsOnAnnotation(value string) *ReplicatedJobWrapper {
	return w.JobAnnotation(contract.DependsOnAnnotationKey, value)
}

// JobAnnotation sets an annotation of the Job template (where resourceclaims' templates and the
// sequencer's depends-on are written).
func (w *ReplicatedJobWrapper) JobAnnotation(key, value string) *ReplicatedJobWrapper {
	w.Template.Annotations = set(w.Template.Annotations, key, value)
	return w
}

// PodLabel sets a label of the pod template.
func (w *ReplicatedJobWrapper) PodLabel(key, value string) *ReplicatedJobWrapper {
	w.Template.Spec.Template.Labels = set(w.Template.Spec.Template.Labels, key, value)
	return w
}

// PodAnnotation sets an annotation of the pod template.
func (w *ReplicatedJobWrapper) PodAnnotation(key, value string) *ReplicatedJobWrapper {
	w.Template.Spec.Template.Annotations = set(w.Template.Spec.Template.Annotations, key, value)
	return w
}

// PodSpec is the pod template's spec, to edit in place.
func (w *ReplicatedJobWrapper) PodSpec() *corev1.PodSpec { return &w.Template.Spec.Template.Spec }

// SchedulerName sets the pod template's schedulerName.
func (w *ReplicatedJobWrapper) SchedulerName(name string) *ReplicatedJobWrapper {
	w.PodSpec().SchedulerName = name
	return w
}

// PriorityClass sets the pod template's priorityClassName.
func (w *ReplicatedJobWrapper) PriorityClass(name string) *ReplicatedJobWrapper {
	w.PodSpec().PriorityClassName = name
	return w
}

// Containers replaces the containers with one of busybox for each name.
func (w *ReplicatedJobWrapper) Containers(names ...string) *ReplicatedJobWrapper {
	w.PodSpec().Containers = busybox(names)
	return w
}

// InitContainers replaces the init containers with one of busybox for each name.
func (w *ReplicatedJobWrapper) InitContainers(names ...string) *ReplicatedJobWrapper {
	w.PodSpec().InitContainers = busybox(names)
	return w
}

// busybox is a container of busybox for each name (nil for none).
func busybox(names []string) []corev1.Container {
	var cs []corev1.Container
	for _, n := range names {
		cs = append(cs, corev1.Container{Name: n, Image: "busybox"})
	}
	return cs
}

// Requests sets the requests of every container: cpu and memory (empty: not requested).
func (w *ReplicatedJobWrapper) Requests(cpu, memory string) *ReplicatedJobWrapper {
	list := corev1.ResourceList{}
	if cpu != "" {
		list[corev1.ResourceCPU] = resource.MustParse(cpu)
	}
	if memory != "" {
		list[corev1.ResourceMemory] = resource.MustParse(memory)
	}
	for i := range w.PodSpec().Containers {
		w.PodSpec().Containers[i].Resources.Requests = list.DeepCopy()
	}
	return w
}

// Mount mounts the volumes names in the first container, at /<name>.
func (w *ReplicatedJobWrapper) Mount(names ...string) *ReplicatedJobWrapper {
	c := &w.PodSpec().Containers[0]
	for _, n := range names {
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: n, MountPath: "/" + n})
	}
	return w
}

// InitMount adds an init container "init" that mounts the volume name.
func (w *ReplicatedJobWrapper) InitMount(name string) *ReplicatedJobWrapper {
	spec := w.PodSpec()
	spec.InitContainers = append(spec.InitContainers, corev1.Container{
		Name: "init", Image: "busybox",
		VolumeMounts: []corev1.VolumeMount{{Name: name, MountPath: "/" + name}},
	})
	return w
}

// Volume adds a volume to the pod template.
func (w *ReplicatedJobWrapper) Volume(v corev1.Volume) *ReplicatedJobWrapper {
	spec := w.PodSpec()
	spec.Volumes = append(spec.Volumes, v)
	return w
}

// ClaimVolume adds the volume name mounting the PVC claim.
func (w *ReplicatedJobWrapper) ClaimVolume(name, claim string) *ReplicatedJobWrapper {
	return w.Volume(ClaimVolume(name, claim))
}

// EmptyDir adds the emptyDir volume name.
func (w *ReplicatedJobWrapper) EmptyDir(name string) *ReplicatedJobWrapper {
	return w.Volume(corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
}

// ClaimVolume is the volume name mounting the PVC claim.
func ClaimVolume(name, claim string) corev1.Volume {
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim},
	}}
}

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

func set(m map[string]string, key, value string) map[string]string {
	if m == nil {
		m = map[string]string{}
	}
	m[key] = value
	return m
}

// ControlledBy makes the Job j the pod's controller, as the Job controller does.
func (w *PodWrapper) ControlledBy(j *batchv1.Job) *PodWrapper {
	w.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(j, batchv1.SchemeGroupVersion.WithKind("Job"))}
	return w
}
