package webhook

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/pkg/addon/addontest"
)

// TestRegister serves admission reviews through the manager's webhook server mux, at the
// exported paths, as the API server sends them.
func TestRegister(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := jobsetv1alpha2.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	mgr, err := ctrl.NewManager(&rest.Config{Host: "https://127.0.0.1:1"}, ctrl.Options{
		Scheme:  scheme,
		Metrics: metricsserver.Options{BindAddress: "0"},
	})
	if err != nil {
		t.Fatalf("NewManager: %v", err)
	}
	if err := Register(mgr, 10, 10); err != nil {
		t.Fatalf("Register: %v", err)
	}
	mux := mgr.GetWebhookServer().WebhookMux()

	review := func(path string, op admissionv1.Operation, obj any) *admissionv1.AdmissionResponse {
		t.Helper()
		raw, err := json.Marshal(obj)
		if err != nil {
			t.Fatal(err)
		}
		body, err := json.Marshal(admissionv1.AdmissionReview{
			TypeMeta: metav1TypeMeta,
			Request: &admissionv1.AdmissionRequest{
				UID: "1", Operation: op, Namespace: "default", Object: runtime.RawExtension{Raw: raw},
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		mux.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			t.Fatalf("POST %s: %d %s", path, rec.Code, rec.Body)
		}
		var out admissionv1.AdmissionReview
		if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
			t.Fatal(err)
		}
		return out.Response
	}

	js := story1().Obj()
	js.TypeMeta = jobSetTypeMeta
	resp := review(MutateJobSetPath, admissionv1.Create, js)
	if !resp.Allowed || len(resp.Patch) == 0 {
		t.Errorf("JobSet mutation: allowed=%t patch=%s result=%+v, want a patch", resp.Allowed, resp.Patch, resp.Result)
	}

	bad := addontest.JobSet("default", "train").VolumeClaimsPolicies(`[{targetReplicatedJobs: [ghost, a], templates: [` + tmpl("data") + `]}]`).
		ReplicatedJobs(addontest.ReplicatedJob("a")).Obj()
	bad.TypeMeta = jobSetTypeMeta
	resp = review(ValidateJobSetPath, admissionv1.Create, bad)
	if resp.Allowed || resp.Result == nil || resp.Result.Code != http.StatusUnprocessableEntity || resp.Result.Details == nil {
		t.Fatalf("JobSet validation: allowed=%t result=%+v, want 422 with details", resp.Allowed, resp.Result)
	}
	var got []fieldErr
	for _, c := range resp.Result.Details.Causes {
		got = append(got, fieldErr{field.ErrorType(c.Type), c.Field})
	}
	want := []fieldErr{
		{field.ErrorTypeNotFound, pol + "[0].targetReplicatedJobs[0]"},
		{field.ErrorTypeInvalid, pol + "[0].templates[0].metadata.name"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Causes (-want +got):\n%s", diff)
	}

	p := pod("distributed-trainjob", "node", 3, 1, "checkpoint-storage").Obj()
	resp = review(MutatePodPath, admissionv1.Create, p)
	if !resp.Allowed || string(resp.Patch) != `[{"op":"add","path":"/spec/volumes","value":[{"name":"checkpoint-storage","persistentVolumeClaim":{"claimName":"checkpoint-storage-distributed-trainjob-node-3-1"}}]}]` {
		t.Errorf("Pod mutation: allowed=%t patch=%s result=%+v", resp.Allowed, resp.Patch, resp.Result)
	}
}

var (
	metav1TypeMeta = metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"}
	jobSetTypeMeta = metav1.TypeMeta{APIVersion: jobsetv1alpha2.GroupVersion.String(), Kind: "JobSet"}
)
