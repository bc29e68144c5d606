package webhook

import (
	"context"
	"fmt"

	"gomodules.xyz/jsonpatch/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/jobset-addons/jobset-addons/pkg/addon"
	"github.com/jobset-addons/jobset-addons/pkg/addon/checks/volumeclaims"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// PodWebhook adds to a pod, on CREATE, the per-pod volumes of its ReplicatedJob, Job index and
// completion index (volumeclaims.PodVolumes), as JSON patch operations that only append. It reads
// nothing but the pod and the add-on's cache: no API call, so that it stays on the pod's
// critical path cheaply.
// A pod that should get a per-pod volume but cannot (no Job or completion index) is denied:
// it must not run without its volume.
//
// It gets too, through the chart's matchConditions, the pods whose template mounts a shared
// PVC (volumeclaims.SharedVolumes): it changes nothing in them, and asks of their shared PVCs what it
// asks of the per-pod ones.
//
// Claims, when set, is the cache of the add-on's own PVCs: a pod whose per-pod or shared PVC
// exists there and is another JobSet's (contract.Identity.Of: names are joined with "-", so two JobSets can
// give one name) is denied, so that it never mounts that JobSet's data; the Job controller
// creates it again with back-off, and the reconciler tells the JobSet (VolumeClaimNameTaken).
// A PVC of the pod's JobSet, one an earlier JobSet of its name left for the same template and
// index, or a user's (not in the cache) is mounted.
type PodWebhook struct {
	Claims client.Reader
}

var _ admission.Handler = (*PodWebhook)(nil)

// Handle implements admission.Handler.
func (w *PodWebhook) Handle(ctx context.Context, req admission.Request) admission.Response {
	pod := &corev1.Pod{}
	if resp, done := addon.DecodeCreate(req, pod); done {
		return resp
	}
	vols, err := volumeclaims.PodVolumes(pod)
	if err != nil {
		logf.FromContext(ctx).V(2).Info("Denied pod without its per-pod volumes", "pod", klog.KObj(pod), "err", err)
		return admission.Denied("volumeclaims: cannot add the pod's per-pod PersistentVolumeClaim volumes: " + err.Error())
	}
	shared := volumeclaims.SharedVolumes(pod)
	if len(vols) == 0 && len(shared) == 0 {
		return admission.Allowed("")
	}
	if msg := w.taken(ctx, req.Namespace, append(shared, vols...)); msg != "" {
		logf.FromContext(ctx).V(2).Info("Denied pod whose PVC is another JobSet's", "pod", klog.KObj(pod), "reason", msg)
		return admission.Denied("volumeclaims: " + msg)
	}
	if len(vols) == 0 {
		return admission.Allowed("")
	}
	return admission.Patched("", volumePatch(pod, vols)...)
}

// taken says which of vols names a PVC that is another JobSet's, or "" when none does (or
// the cache cannot say: the pod is then let through, as before the PVC existed).
func (w *PodWebhook) taken(ctx context.Context, namespace string, vols []volumeclaims.PodVolume) string {
	if w.Claims == nil {
		return ""
	}
	for _, v := range vols {
		pvc := &corev1.PersistentVolumeClaim{}
		key := client.ObjectKey{Namespace: namespace, Name: v.Volume.PersistentVolumeClaim.ClaimName}
		if err := w.Claims.Get(ctx, key, pvc); err != nil {
			continue
		}
		if v.Identity.Of(pvc) == contract.Foreign {
			return fmt.Sprintf("the pod's PersistentVolumeClaim %s (volume %s) exists and was made for %s, not for this pod's JobSet %s: the pod is not created until that PVC is gone (rename the JobSet, the ReplicatedJob or the template, or delete that PVC if its data is not needed)",
				key.Name, v.Volume.Name, v.Identity.Holder(pvc), v.Identity.JobSet)
		}
	}
	return ""
}

// volumePatch appends vols to pod's spec.volumes.
func volumePatch(pod *corev1.Pod, vols []volumeclaims.PodVolume) []jsonpatch.JsonPatchOperation {
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
