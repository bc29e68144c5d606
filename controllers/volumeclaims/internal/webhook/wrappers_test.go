package webhook

import (
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	"strings"

	"github.com/jobset-addons/jobset-addons/controllers/volumeclaims/internal/policy"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// jobSetWrapper builds a JobSet for tests.
type jobSetWrapper struct{ jobsetv1alpha2.JobSet }

func jobSet(name string) *jobSetWrapper {
	return &jobSetWrapper{jobsetv1alpha2.JobSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
	}}
}

func (w *jobSetWrapper) Obj() *jobsetv1alpha2.JobSet { return &w.JobSet }

func (w *jobSetWrapper) Namespace(ns string) *jobSetWrapper {
	w.JobSet.Namespace = ns
	return w
}

// GenerateName sets metadata.generateName and clears metadata.name, as a mutating webhook sees
// such a JobSet.
func (w *jobSetWrapper) GenerateName(prefix string) *jobSetWrapper {
	w.JobSet.GenerateName = prefix
	w.JobSet.Name = ""
	return w
}

func (w *jobSetWrapper) Annotation(key, value string) *jobSetWrapper {
	if w.Annotations == nil {
		w.Annotations = map[string]string{}
	}
	w.Annotations[key] = value
	return w
}

func (w *jobSetWrapper) Policies(value string) *jobSetWrapper {
	return w.Annotation(contract.PoliciesAnnotationKey, value)
}

func (w *jobSetWrapper) Admitted() *jobSetWrapper {
	return w.Annotation(contract.VolumeClaimsAdmittedAnnotationKey, contract.EnabledValue)
}

func (w *jobSetWrapper) ReplicatedJobs(rjs ...*replicatedJobWrapper) *jobSetWrapper {
	for _, rj := range rjs {
		w.Spec.ReplicatedJobs = append(w.Spec.ReplicatedJobs, *rj.Obj())
	}
	return w
}

// replicatedJobWrapper builds a ReplicatedJob for tests. It starts with one replica, Indexed
// completion mode (what upstream JobSet's own mutating webhook defaults to, before any
// validating webhook runs) and one container, "main", without mounts.
type replicatedJobWrapper struct{ jobsetv1alpha2.ReplicatedJob }

func replicatedJob(name string) *replicatedJobWrapper {
	return &replicatedJobWrapper{jobsetv1alpha2.ReplicatedJob{
		Name:     name,
		Replicas: 1,
		Template: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{
			CompletionMode: ptr.To(batchv1.IndexedCompletion),
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				Containers: []corev1.Container{{Name: "main", Image: "busybox"}},
			}},
		}},
	}}
}

func (w *replicatedJobWrapper) Obj() *jobsetv1alpha2.ReplicatedJob { return &w.ReplicatedJob }

func (w *replicatedJobWrapper) Replicas(n int32) *replicatedJobWrapper {
	w.ReplicatedJob.Replicas = n
	return w
}

// Pods sets parallelism and completions to n.
func (w *replicatedJobWrapper) Pods(n int32) *replicatedJobWrapper {
	w.Template.Spec.Parallelism = ptr.To(n)
	w.Template.Spec.Completions = ptr.To(n)
	return w
}

// CompletionMode sets the completion mode; nil leaves it unset.
func (w *replicatedJobWrapper) CompletionMode(m *batchv1.CompletionMode) *replicatedJobWrapper {
	w.Template.Spec.CompletionMode = m
	return w
}

func (w *replicatedJobWrapper) DependsOn(name string) *replicatedJobWrapper {
	w.ReplicatedJob.DependsOn = append(w.ReplicatedJob.DependsOn, jobsetv1alpha2.DependsOn{Name: name, Status: jobsetv1alpha2.DependencyComplete})
	return w
}

// Mount mounts the volumes names in the first container.
func (w *replicatedJobWrapper) Mount(names ...string) *replicatedJobWrapper {
	c := &w.podSpec().Containers[0]
	for _, n := range names {
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: n, MountPath: "/" + n})
	}
	return w
}

// InitMount adds an init container, "init", that mounts the volume name.
func (w *replicatedJobWrapper) InitMount(name string) *replicatedJobWrapper {
	spec := w.podSpec()
	spec.InitContainers = append(spec.InitContainers, corev1.Container{
		Name: "init", Image: "busybox",
		VolumeMounts: []corev1.VolumeMount{{Name: name, MountPath: "/" + name}},
	})
	return w
}

func (w *replicatedJobWrapper) Volume(v corev1.Volume) *replicatedJobWrapper {
	spec := w.podSpec()
	spec.Volumes = append(spec.Volumes, v)
	return w
}

// ClaimVolume adds the volume name mounting the PVC claim.
func (w *replicatedJobWrapper) ClaimVolume(name, claim string) *replicatedJobWrapper {
	return w.Volume(corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim},
	}})
}

func (w *replicatedJobWrapper) EmptyDir(name string) *replicatedJobWrapper {
	return w.Volume(corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
}

func (w *replicatedJobWrapper) PodLabel(key, value string) *replicatedJobWrapper {
	meta := &w.Template.Spec.Template.ObjectMeta
	if meta.Labels == nil {
		meta.Labels = map[string]string{}
	}
	meta.Labels[key] = value
	return w
}

func (w *replicatedJobWrapper) PodAnnotation(key, value string) *replicatedJobWrapper {
	meta := &w.Template.Spec.Template.ObjectMeta
	if meta.Annotations == nil {
		meta.Annotations = map[string]string{}
	}
	meta.Annotations[key] = value
	return w
}

// PerPod is what the mutating webhook puts on a targeted pod template: the scope label, the
// list of per-pod volumes, and a placeholder volume for each.
func (w *replicatedJobWrapper) PerPod(volumes string) *replicatedJobWrapper {
	for _, name := range strings.Split(volumes, ",") {
		if !policy.HasVolume(w.podSpec(), name) {
			w.ClaimVolume(name, contract.VolumeClaimsPlaceholderClaimName)
		}
	}
	return w.PodLabel(contract.VolumeClaimsPerPodLabelKey, contract.EnabledValue).
		PodAnnotation(contract.VolumeClaimsPerPodVolumesAnnotationKey, volumes)
}

func (w *replicatedJobWrapper) podSpec() *corev1.PodSpec { return &w.Template.Spec.Template.Spec }

// podWrapper builds a Pod as JobSet and the Job controller create it.
type podWrapper struct{ corev1.Pod }

// pod is a pod of JobSet jobSet, ReplicatedJob rj, with the given Job and completion indexes.
func pod(jobSet, rj, jobIndex, completionIndex string) *podWrapper {
	p := &podWrapper{corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName: jobSet + "-" + rj + "-" + jobIndex + "-" + completionIndex + "-",
			Namespace:    "default",
			Labels: map[string]string{
				contract.JobSetNameLabelKey:         jobSet,
				contract.ReplicatedJobNameLabelKey:  rj,
				contract.JobIndexLabelKey:           jobIndex,
				contract.VolumeClaimsPerPodLabelKey: contract.EnabledValue,
			},
			Annotations: map[string]string{contract.JobCompletionIndexAnnotationKey: completionIndex},
		},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "busybox"}}},
	}}
	return p
}

func (w *podWrapper) Obj() *corev1.Pod { return &w.Pod }

func (w *podWrapper) PerPodVolumes(list string) *podWrapper {
	w.Annotations[contract.VolumeClaimsPerPodVolumesAnnotationKey] = list
	return w
}

func (w *podWrapper) Volume(v corev1.Volume) *podWrapper {
	w.Spec.Volumes = append(w.Spec.Volumes, v)
	return w
}

func (w *podWrapper) WithoutLabel(key string) *podWrapper {
	delete(w.Labels, key)
	return w
}

func (w *podWrapper) WithoutAnnotation(key string) *podWrapper {
	delete(w.Annotations, key)
	return w
}

func claimVolume(name, claim string) corev1.Volume {
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim},
	}}
}
