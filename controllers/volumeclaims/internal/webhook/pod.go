package webhook

import (
	"context"
	"fmt"

	"gomodules.xyz/jsonpatch/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/jobset-addons/jobset-addons/pkg/addon"
	policy "github.com/jobset-addons/jobset-addons/pkg/addon/checks/volumeclaims"
)

// PodWebhook adds to a pod, on CREATE, the per-pod volumes of its ReplicatedJob, Job index and
// completion index (policy.PodVolumes), as JSON patch operations that only append. It reads
// nothing but the pod: no API call, so that it stays on the pod's critical path cheaply.
// A pod that should get a per-pod volume but cannot (no Job or completion index) is denied:
// it must not run without its volume.
type PodWebhook struct{}

var _ admission.Handler = (*PodWebhook)(nil)

// Handle implements admission.Handler.
func (w *PodWebhook) Handle(ctx context.Context, req admission.Request) admission.Response {
	pod := &corev1.Pod{}
	if resp, done := addon.DecodeCreate(req, pod); done {
		return resp
	}
	vols, err := policy.PodVolumes(pod)
	if err != nil {
		logf.FromContext(ctx).V(2).Info("Denied pod without its per-pod volumes", "pod", klog.KObj(pod), "err", err)
		return admission.Denied("volumeclaims: cannot add the pod's per-pod PersistentVolumeClaim volumes: " + err.Error())
	}
	if len(vols) == 0 {
		return admission.Allowed("")
	}
	return admission.Patched("", volumePatch(pod, vols)...)
}

// volumePatch appends vols to pod's spec.volumes.
func volumePatch(pod *corev1.Pod, vols []policy.PodVolume) []jsonpatch.JsonPatchOperation {
	var ops []jsonpatch.JsonPatchOperation
	var appended []corev1.Volume
	for _, v := range vols {
		if v.Index >= 0 {
			ops = append(ops, jsonpatch.NewOperation("replace", fmt.Sprintf("/spec/volumes/%d", v.Index), v.Volume))
		} else {
			appended = append(appended, v.Volume)
		}
	}
	if len(appended) == 0 {
		return ops
	}
	if len(pod.Spec.Volumes) == 0 {
		return append(ops, jsonpatch.NewOperation("add", "/spec/volumes", appended))
	}
	for _, v := range appended {
		ops = append(ops, jsonpatch.NewOperation("add", "/spec/volumes/-", v))
	}
	return ops
}
