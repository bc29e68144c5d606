package sequencer

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/pkg/addon/version"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// BarrierUser is the user and group the barrier container runs as, whatever the pod's
// securityContext says (the nonroot user of distroless images): a pod that runs as root still
// gets a barrier that the kubelet's runAsNonRoot check accepts.
const BarrierUser int64 = 65532

// Default requests and limits of the barrier container. It waits on a file and exits: a CPU
// limit throttles nothing it needs, and a limit for each resource lets it into namespaces whose
// ResourceQuota asks for limits.
var (
	DefaultBarrierCPURequest    = resource.MustParse("10m")
	DefaultBarrierCPULimit      = resource.MustParse("50m")
	DefaultBarrierMemoryRequest = resource.MustParse("16Mi")
	DefaultBarrierMemoryLimit   = resource.MustParse("32Mi")
)

// BarrierSettings are the sequencer's settings of the barrier container (its flags).
type BarrierSettings struct {
	// Image of the barrier container.
	Image string
	// Resources of the barrier container: requests and limits of CPU and memory.
	Resources corev1.ResourceRequirements
}

// DefaultBarrierImage is the barrier container's default image: this release's.
func DefaultBarrierImage() string { return "ghcr.io/jobset-addons/barrier:" + version.String() }

// DefaultBarrierSettings are the barrier container's defaults: the controller's without flags.
func DefaultBarrierSettings() BarrierSettings {
	return BarrierSettings{Image: DefaultBarrierImage(), Resources: DefaultBarrierResources()}
}

// DefaultBarrierResources are the barrier container's default requests and limits.
func DefaultBarrierResources() corev1.ResourceRequirements {
	return BarrierResources(DefaultBarrierCPURequest, DefaultBarrierCPULimit, DefaultBarrierMemoryRequest, DefaultBarrierMemoryLimit)
}

// BarrierResources are requests and limits of CPU and memory.
func BarrierResources(cpuRequest, cpuLimit, memoryRequest, memoryLimit resource.Quantity) corev1.ResourceRequirements {
	return corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: cpuRequest, corev1.ResourceMemory: memoryRequest},
		Limits:   corev1.ResourceList{corev1.ResourceCPU: cpuLimit, corev1.ResourceMemory: memoryLimit},
	}
}

// Validate tells what is wrong with the settings: no image, a request or limit not above zero,
// a limit below its request.
func (s BarrierSettings) Validate() error {
	if s.Image == "" {
		return fmt.Errorf("the barrier image may not be empty")
	}
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		req, lim := s.Resources.Requests[name], s.Resources.Limits[name]
		if req.Sign() <= 0 || lim.Sign() <= 0 {
			return fmt.Errorf("the barrier container's %s request (%s) and limit (%s) must be above zero", name, req.String(), lim.String())
		}
		if lim.Cmp(req) < 0 {
			return fmt.Errorf("the barrier container's %s limit (%s) may not be below its request (%s)", name, lim.String(), req.String())
		}
	}
	return nil
}

// BarrierContainer is the init container the webhook appends. It runs as BarrierUser, with
// its own settings winning over the pod's securityContext, and with what Pod Security's
// restricted level asks of a container.
func BarrierContainer(s BarrierSettings, timeout time.Duration) corev1.Container {
	return corev1.Container{
		Name:  contract.StartBarrierContainerName,
		Image: s.Image,
		Args: []string{
			"--state-file=" + BarrierMountPath + "/" + BarrierStateFile,
			"--deadline=" + (timeout + contract.StartBarrierGrace).String(),
		},
		Resources:                *s.Resources.DeepCopy(),
		VolumeMounts:             []corev1.VolumeMount{{Name: contract.StartBarrierContainerName, MountPath: BarrierMountPath, ReadOnly: true}},
		TerminationMessagePath:   corev1.TerminationMessagePathDefault,
		TerminationMessagePolicy: corev1.TerminationMessageReadFile,
		ImagePullPolicy:          corev1.PullIfNotPresent,
		SecurityContext: &corev1.SecurityContext{
			RunAsNonRoot:             ptr.To(true),
			RunAsUser:                ptr.To(BarrierUser),
			RunAsGroup:               ptr.To(BarrierUser),
			ReadOnlyRootFilesystem:   ptr.To(true),
			AllowPrivilegeEscalation: ptr.To(false),
			Privileged:               ptr.To(false),
			Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
			SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		},
	}
}

// comparable is c without what the sequencer's settings give it (image, resources), which may
// differ between the replica that injected it and the one that validates it (an upgrade).
func comparable(c corev1.Container) corev1.Container {
	c.Image, c.Resources = "", corev1.ResourceRequirements{}
	return c
}

// BarrierVolume is the downwardAPI volume of the pod's barrier-state annotation. Its file is
// readable by every user (0444): the barrier's own, whatever fsGroup the pod has.
func BarrierVolume() corev1.Volume {
	return corev1.Volume{Name: contract.StartBarrierContainerName, VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{
		Items: []corev1.DownwardAPIVolumeFile{{
			Path:     BarrierStateFile,
			FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.annotations['" + contract.StartBarrierStateAnnotationKey + "']"},
		}},
		DefaultMode: ptr.To[int32](0o444),
	}}}
}

// InjectBarrier appends the barrier init container after the user's init containers, its
// volume and the scope label to every pod template of the JobSet. A template that already has
// a container or volume of the barrier's name is left as it is (a re-admission; a clash is
// for ValidateBarrier to refuse).
func InjectBarrier(js *jobsetv1alpha2.JobSet, s BarrierSettings, timeout time.Duration) {
	for i := range js.Spec.ReplicatedJobs {
		pt := &js.Spec.ReplicatedJobs[i].Template.Spec.Template
		if pt.Labels == nil {
			pt.Labels = map[string]string{}
		}
		pt.Labels[contract.StartBarrierLabelKey] = contract.EnabledValue
		if containerIndex(pt.Spec.InitContainers) < 0 && containerIndex(pt.Spec.Containers) < 0 {
			pt.Spec.InitContainers = append(pt.Spec.InitContainers, BarrierContainer(s, timeout))
		}
		if volumeIndex(pt.Spec.Volumes) < 0 {
			pt.Spec.Volumes = append(pt.Spec.Volumes, BarrierVolume())
		}
	}
}
