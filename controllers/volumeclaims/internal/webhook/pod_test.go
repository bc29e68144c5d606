package webhook

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	jsonpatchapply "github.com/evanphx/json-patch/v5"
	"github.com/google/go-cmp/cmp"
	"gomodules.xyz/jsonpatch/v2"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/jobset-addons/jobset-addons/pkg/addon/addontest"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

func podRequest(t testing.TB, op admissionv1.Operation, p *corev1.Pod) admission.Request {
	t.Helper()
	raw, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	return admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		Operation: op, Namespace: "default", Object: runtime.RawExtension{Raw: raw},
	}}
}

func TestPodWebhook(t *testing.T) {
	emptyDir := corev1.Volume{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}
	token := corev1.Volume{Name: "kube-api-access", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{}}}
	cases := map[string]struct {
		op          admissionv1.Operation
		pod         *corev1.Pod
		claims      []client.Object // in the add-on's cache
		wantAllowed bool
		wantCode    int32
		wantMessage string // in the denial
		wantPatches []jsonpatch.JsonPatchOperation
		wantVolumes []corev1.Volume // once the patches are applied
	}{
		"story 1: pod of Job 3, completion index 1, without volumes": {
			pod:         pod("distributed-trainjob", "node", 3, 1, "checkpoint-storage").Obj(),
			wantAllowed: true,
			wantCode:    http.StatusOK,
			wantPatches: []jsonpatch.JsonPatchOperation{{Operation: "add", Path: "/spec/volumes", Value: []corev1.Volume{
				addontest.ClaimVolume("checkpoint-storage", "checkpoint-storage-distributed-trainjob-node-3-1"),
			}}},
			wantVolumes: []corev1.Volume{addontest.ClaimVolume("checkpoint-storage", "checkpoint-storage-distributed-trainjob-node-3-1")},
		},
		"story 1 as the JobSet webhook left it: the placeholder is replaced in place": {
			pod: pod("distributed-trainjob", "node", 3, 1, "checkpoint-storage").
				Volume(token).Volume(addontest.ClaimVolume("checkpoint-storage", contract.VolumeClaimsPlaceholderClaimName)).Obj(),
			wantAllowed: true,
			wantCode:    http.StatusOK,
			wantPatches: []jsonpatch.JsonPatchOperation{
				{Operation: "replace", Path: "/spec/volumes/1", Value: addontest.ClaimVolume("checkpoint-storage", "checkpoint-storage-distributed-trainjob-node-3-1")},
			},
			wantVolumes: []corev1.Volume{token, addontest.ClaimVolume("checkpoint-storage", "checkpoint-storage-distributed-trainjob-node-3-1")},
		},
		"story 3: trainer pod with shared volumes already injected": {
			pod: pod("hybrid-training", "trainer", 2, 5, "worker-scratch").
				Volume(addontest.ClaimVolume("dataset-cache", "dataset-cache-hybrid-training")).
				Volume(addontest.ClaimVolume("results-storage", "results-storage-hybrid-training")).Obj(),
			wantAllowed: true,
			wantCode:    http.StatusOK,
			wantPatches: []jsonpatch.JsonPatchOperation{
				{Operation: "add", Path: "/spec/volumes/-", Value: addontest.ClaimVolume("worker-scratch", "worker-scratch-hybrid-training-trainer-2-5")},
			},
			wantVolumes: []corev1.Volume{
				addontest.ClaimVolume("dataset-cache", "dataset-cache-hybrid-training"),
				addontest.ClaimVolume("results-storage", "results-storage-hybrid-training"),
				addontest.ClaimVolume("worker-scratch", "worker-scratch-hybrid-training-trainer-2-5"),
			},
		},
		"two per-pod volumes after an existing one": {
			pod:         pod("train", "w", 0, 12, "ckpt,scratch-b").Volume(token).Obj(),
			wantAllowed: true,
			wantCode:    http.StatusOK,
			wantPatches: []jsonpatch.JsonPatchOperation{
				{Operation: "add", Path: "/spec/volumes/-", Value: addontest.ClaimVolume("ckpt", "ckpt-train-w-0-12")},
				{Operation: "add", Path: "/spec/volumes/-", Value: addontest.ClaimVolume("scratch-b", "scratch-b-train-w-0-12")},
			},
			wantVolumes: []corev1.Volume{token, addontest.ClaimVolume("ckpt", "ckpt-train-w-0-12"), addontest.ClaimVolume("scratch-b", "scratch-b-train-w-0-12")},
		},
		"existing volume of that name untouched": {
			pod:         pod("train", "w", 0, 0, "scratch").Volume(emptyDir).Obj(),
			wantAllowed: true,
			wantCode:    http.StatusOK,
			wantVolumes: []corev1.Volume{emptyDir},
		},
		"no per-pod volumes annotation": {
			pod:         pod("train", "w", 0, 0, "").Obj(),
			wantAllowed: true,
			wantCode:    http.StatusOK,
		},
		"missing completion index: denied": {
			pod:         pod("train", "w", 0, 0, "scratch").WithoutAnnotation(contract.JobCompletionIndexAnnotationKey).Obj(),
			wantCode:    http.StatusForbidden,
			wantMessage: contract.JobCompletionIndexAnnotationKey,
		},
		"missing Job index: denied": {
			pod:         pod("train", "w", 0, 0, "scratch").WithoutLabel(contract.JobIndexLabelKey).Obj(),
			wantCode:    http.StatusForbidden,
			wantMessage: contract.JobIndexLabelKey,
		},
		"missing ReplicatedJob: denied": {
			pod:         pod("train", "w", 0, 0, "scratch").WithoutLabel(contract.ReplicatedJobNameLabelKey).Obj(),
			wantCode:    http.StatusForbidden,
			wantMessage: contract.ReplicatedJobNameLabelKey,
		},
		"another JobSet's PVC of the name (JobSet train-w-0-0's shared ckpt): denied": {
			pod:         pod("train", "w", 0, 0, "ckpt").Obj(),
			claims:      []client.Object{madePVC("ckpt-train-w-0-0", "train-w-0-0", map[string]string{contract.VolumeClaimTemplateLabelKey: "ckpt"})},
			wantCode:    http.StatusForbidden,
			wantMessage: "volumeclaims: the pod's PersistentVolumeClaim ckpt-train-w-0-0 (volume ckpt) exists and was made for JobSet train-w-0-0 for template=ckpt, not for this pod's JobSet train",
		},
		"the PVC an earlier JobSet train left for this index: mounted": {
			pod: pod("train", "w", 0, 0, "ckpt").Obj(),
			claims: []client.Object{madePVC("ckpt-train-w-0-0", "train", map[string]string{
				contract.VolumeClaimTemplateLabelKey: "ckpt", contract.VolumeClaimReplicatedJobLabelKey: "w",
				contract.VolumeClaimJobIndexLabelKey: "0", contract.VolumeClaimPodIndexLabelKey: "0",
			})},
			wantAllowed: true,
			wantCode:    http.StatusOK,
			wantPatches: []jsonpatch.JsonPatchOperation{{Operation: "add", Path: "/spec/volumes", Value: []corev1.Volume{addontest.ClaimVolume("ckpt", "ckpt-train-w-0-0")}}},
			wantVolumes: []corev1.Volume{addontest.ClaimVolume("ckpt", "ckpt-train-w-0-0")},
		},
		"shared only: another JobSet's PVC of its shared name (JobSet base-bert's ckpt, bert's ckpt-base): denied": {
			pod: sharedPod("bert", "ckpt-base").Volume(addontest.ClaimVolume("ckpt-base", "ckpt-base-bert")).Obj(),
			claims: []client.Object{madePVC("ckpt-base-bert", "base-bert", map[string]string{
				contract.VolumeClaimTemplateLabelKey: "ckpt",
			})},
			wantCode:    http.StatusForbidden,
			wantMessage: "volumeclaims: the pod's PersistentVolumeClaim ckpt-base-bert (volume ckpt-base) exists and was made for JobSet base-bert for template=ckpt, not for this pod's JobSet bert",
		},
		"shared only: its own JobSet's shared PVC: allowed, unchanged": {
			pod:         sharedPod("bert", "ckpt-base").Volume(addontest.ClaimVolume("ckpt-base", "ckpt-base-bert")).Obj(),
			claims:      []client.Object{madePVC("ckpt-base-bert", "bert", map[string]string{contract.VolumeClaimTemplateLabelKey: "ckpt-base"})},
			wantAllowed: true,
			wantCode:    http.StatusOK,
			wantVolumes: []corev1.Volume{addontest.ClaimVolume("ckpt-base", "ckpt-base-bert")},
		},
		"shared only: no PVC in the cache yet (or a user's): allowed": {
			pod:         sharedPod("bert", "ckpt-base").Volume(addontest.ClaimVolume("ckpt-base", "ckpt-base-bert")).Obj(),
			wantAllowed: true,
			wantCode:    http.StatusOK,
			wantVolumes: []corev1.Volume{addontest.ClaimVolume("ckpt-base", "ckpt-base-bert")},
		},
		"shared only: a volume of that name that names another claim is not looked at": {
			pod:         sharedPod("bert", "ckpt-base").Volume(addontest.ClaimVolume("ckpt-base", "mine")).Obj(),
			claims:      []client.Object{madePVC("ckpt-base-bert", "base-bert", map[string]string{contract.VolumeClaimTemplateLabelKey: "ckpt"})},
			wantAllowed: true,
			wantCode:    http.StatusOK,
			wantVolumes: []corev1.Volume{addontest.ClaimVolume("ckpt-base", "mine")},
		},
		"per-pod and shared: the shared PVC another JobSet's: denied, nothing patched": {
			pod: pod("bert", "w", 0, 0, "scratch").Annotation(contract.VolumeClaimsSharedVolumesAnnotationKey, "ckpt-base").
				Volume(addontest.ClaimVolume("ckpt-base", "ckpt-base-bert")).Obj(),
			claims:      []client.Object{madePVC("ckpt-base-bert", "base-bert", map[string]string{contract.VolumeClaimTemplateLabelKey: "ckpt"})},
			wantCode:    http.StatusForbidden,
			wantMessage: "ckpt-base-bert (volume ckpt-base) exists and was made for JobSet base-bert",
		},
		"UPDATE: nothing to do": {
			op:          admissionv1.Update,
			pod:         pod("train", "w", 0, 0, "scratch").Obj(),
			wantAllowed: true,
			wantCode:    http.StatusOK,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			op := tc.op
			if op == "" {
				op = admissionv1.Create
			}
			req := podRequest(t, op, tc.pod)
			resp := (&PodWebhook{Claims: fake.NewClientBuilder().WithObjects(tc.claims...).Build()}).Handle(context.Background(), req)
			if resp.Allowed != tc.wantAllowed || resp.Result == nil || resp.Result.Code != tc.wantCode {
				t.Fatalf("Response allowed=%t result=%+v, want allowed=%t code %d", resp.Allowed, resp.Result, tc.wantAllowed, tc.wantCode)
			}
			if !strings.Contains(resp.Result.Message, tc.wantMessage) {
				t.Errorf("Message %q does not contain %q", resp.Result.Message, tc.wantMessage)
			}
			if diff := cmp.Diff(tc.wantPatches, resp.Patches); diff != "" {
				t.Errorf("Patches (-want +got):\n%s", diff)
			}
			if !tc.wantAllowed {
				return
			}
			got := tc.pod
			if len(resp.Patches) > 0 {
				got = applyPatches(t, req.Object.Raw, resp.Patches)
			}
			if diff := cmp.Diff(tc.wantVolumes, got.Spec.Volumes); diff != "" {
				t.Errorf("Volumes (-want +got):\n%s", diff)
			}
		})
	}
}

// sharedPod is a pod of JobSet jobSet whose template mounts the shared templates (the
// shared-volumes annotation), without the per-pod label.
func sharedPod(jobSet, shared string) *addontest.PodWrapper {
	return addontest.Pod("default", jobSet, "w", 0, 0).Annotation(contract.VolumeClaimsSharedVolumesAnnotationKey, shared)
}

// madePVC is a PVC volumeclaims made in namespace default for JobSet jobSet, with parts.
func madePVC(name, jobSet string, parts map[string]string) *corev1.PersistentVolumeClaim {
	labels := map[string]string{contract.ManagedByLabelKey: contract.VolumeClaimsManagedByValue, contract.JobSetNameLabelKey: jobSet}
	for k, v := range parts {
		labels[k] = v
	}
	return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, Labels: labels}}
}

func TestPodWebhookBadObject(t *testing.T) {
	req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		Operation: admissionv1.Create, Object: runtime.RawExtension{Raw: []byte(`{"metadata":`)},
	}}
	resp := (&PodWebhook{}).Handle(context.Background(), req)
	if resp.Allowed || resp.Result == nil || resp.Result.Code != http.StatusBadRequest {
		t.Errorf("Response allowed=%t result=%+v, want 400", resp.Allowed, resp.Result)
	}
}

// applyPatches applies the JSON patch operations to the raw pod, as the API server does.
func applyPatches(t *testing.T, raw []byte, ops []jsonpatch.JsonPatchOperation) *corev1.Pod {
	t.Helper()
	data, err := json.Marshal(ops)
	if err != nil {
		t.Fatal(err)
	}
	patch, err := jsonpatchapply.DecodePatch(data)
	if err != nil {
		t.Fatal(err)
	}
	patched, err := patch.Apply(raw)
	if err != nil {
		t.Fatalf("Applying %s: %v", data, err)
	}
	p := &corev1.Pod{}
	if err := json.Unmarshal(patched, p); err != nil {
		t.Fatal(err)
	}
	return p
}

func BenchmarkPodWebhook(b *testing.B) {
	req := podRequest(b, admissionv1.Create, pod("hybrid-training", "trainer", 2, 5, "worker-scratch").
		Volume(addontest.ClaimVolume("dataset-cache", "dataset-cache-hybrid-training")).Obj())
	w := &PodWebhook{}
	ctx := context.Background()
	for b.Loop() {
		if resp := w.Handle(ctx, req); !resp.Allowed {
			b.Fatal(resp.Result)
		}
	}
}
