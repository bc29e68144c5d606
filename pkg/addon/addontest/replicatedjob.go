package addontest

import (
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

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
