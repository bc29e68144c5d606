package webhook

import (
	"context"
	"fmt"

	"gomodules.xyz/jsonpatch/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/pkg/addon"
	"github.com/jobset-addons/jobset-addons/pkg/addon/checks/volumeclaims"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// PodWebhook adds to a pod, on CREATE, the per-pod volumes of its ReplicatedJob, Job index and
// completion index (volumeclaims.PodVolumes), as JSON patch operations that only append.
// A pod that should get a per-pod volume but cannot (no Job or completion index) is denied:
// it must not run without its volume.
//
// It gets too, through the chart's matchConditions, the pods whose template mounts a shared
// PVC (volumeclaims.SharedVolumes): it changes nothing in them, and asks of their shared PVCs what it
// asks of the per-pod ones.
//
// What it asks of each PVC a pod mounts: is it the pod's JobSet's? Names are joined with "-",
// so two JobSets can give one name (contract.Identity.Of). A PVC of the pod's JobSet, one an
// earlier JobSet of its name left for the same template and index, or a user's is mounted. A
// PVC another JobSet holds is not: the pod is denied, the Job controller creates it again
// with back-off, and the reconciler tells the JobSet (VolumeClaimNameTaken).
//
// It reads the add-on's cache (Claims) first, so that a pod whose PVC is there costs no API
// call. A PVC not there yet may be made any moment by another JobSet of a colliding name, and
// the pod would then mount that JobSet's data: so the webhook makes it itself, for the pod's
// JobSet (Client; the very PVC the reconciler makes), and the first create wins. A create
// that collides reads the PVC from the API server and asks the same question; one that fails
// otherwise (a quota, say) denies the pod, naming the PVC, until the PVC can be made. A dry
// run makes nothing (the chart declares sideEffects NoneOnDryRun).
type PodWebhook struct {
	// Claims is the cache of the add-on's own PVCs; nil: nothing is checked.
	Claims client.Reader
	// JobSets reads the pod's JobSet (the add-on's cache).
	JobSets client.Reader
	// Client makes a PVC the cache does not have, and reads one whose create collided; nil:
	// nothing is made.
	Client client.Client
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
	dryRun := ptr.Deref(req.DryRun, false)
	if msg := w.check(ctx, req.Namespace, append(shared, vols...), dryRun); msg != "" {
		logf.FromContext(ctx).V(2).Info("Denied pod whose PVC is not its JobSet's", "pod", klog.KObj(pod), "reason", msg)
		return admission.Denied("volumeclaims: " + msg)
	}
	if len(vols) == 0 {
		return admission.Allowed("")
	}
	return admission.Patched("", volumePatch(pod, vols)...)
}

// check says why the pod may not mount one of vols (another JobSet's, or not made and
// unmakeable yet), or "" when it may.
func (w *PodWebhook) check(ctx context.Context, namespace string, vols []volumeclaims.PodVolume, dryRun bool) string {
	if w.Claims == nil {
		return ""
	}
	for _, v := range vols {
		pvc := &corev1.PersistentVolumeClaim{}
		key := client.ObjectKey{Namespace: namespace, Name: v.Volume.PersistentVolumeClaim.ClaimName}
		err := w.Claims.Get(ctx, key, pvc)
		if apierrors.IsNotFound(err) && !dryRun {
			if msg := w.make(ctx, key, v); msg != "" {
				return msg
			}
			continue
		}
		if err == nil && v.Identity.Of(pvc) == contract.Foreign {
			return takenMessage(key.Name, v, v.Identity.Holder(pvc))
		}
	}
	return ""
}

// make creates the PVC key of v for the pod's JobSet (addon.MakeFirst), unless it exists: it
// then says why the pod may not mount it (another JobSet's), or "". It makes nothing for a pod whose JobSet is
// gone, replaced, or has no policy for v (the pod goes on as before the add-on made PVCs
// here).
func (w *PodWebhook) make(ctx context.Context, key client.ObjectKey, v volumeclaims.PodVolume) string {
	if w.Client == nil || w.JobSets == nil {
		return ""
	}
	js := &jobsetv1alpha2.JobSet{}
	jsKey := client.ObjectKey{Namespace: key.Namespace, Name: v.Identity.JobSet}
	err := w.JobSets.Get(ctx, jsKey, js)
	if apierrors.IsNotFound(err) {
		err = w.Client.Get(ctx, jsKey, js) // the cache may be behind a JobSet just made
	}
	if err != nil || js.UID != v.Identity.UID || !js.DeletionTimestamp.IsZero() {
		return ""
	}
	policies, ok, errs := volumeclaims.Parse(js)
	if !ok || len(errs) > 0 {
		return ""
	}
	c, ok := v.Of(js, policies)
	if !ok {
		return ""
	}
	pvc := c.PVC(js)
	holder, made, err := addon.MakeFirst(ctx, w.Client, pvc, v.Identity)
	switch {
	case made:
		logf.FromContext(ctx).V(2).Info("Made the pod's PVC", "pvc", klog.KObj(pvc))
		addon.CountObject("PersistentVolumeClaim", addon.ActionCreated, 1)
		return ""
	case holder != "":
		return takenMessage(key.Name, v, holder)
	case err == nil || addon.NamespaceTerminating(err):
		return ""
	default:
		return fmt.Sprintf("the pod's PersistentVolumeClaim %s (volume %s) does not exist yet and cannot be made for JobSet %s: %v; the pod is created again once it can be",
			key.Name, v.Volume.Name, v.Identity.JobSet, err)
	}
}

// takenMessage says that the PVC name, for v, is another JobSet's: holder's.
func takenMessage(name string, v volumeclaims.PodVolume, holder string) string {
	return fmt.Sprintf("the pod's PersistentVolumeClaim %s (volume %s) exists and was made for %s, not for this pod's JobSet %s: the pod is not created until that PVC is gone (rename the JobSet, the ReplicatedJob or the template, or delete that PVC if its data is not needed)",
		name, v.Volume.Name, holder, v.Identity.JobSet)
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
