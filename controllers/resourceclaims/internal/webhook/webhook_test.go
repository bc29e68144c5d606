package webhook

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	jsonpatchapply "github.com/evanphx/json-patch/v5"
	admissionv1 "k8s.io/api/admission/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/component-base/featuregate"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/controllers/resourceclaims/internal/claims"
	"github.com/jobset-addons/jobset-addons/pkg/addon/addontest"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

func gates(t testing.TB, on bool) featuregate.FeatureGate {
	g := featuregate.NewFeatureGate()
	if err := g.Add(claims.Gates); err != nil {
		t.Fatal(err)
	}
	if !on {
		if err := g.Set(string(claims.Gate) + "=false"); err != nil {
			t.Fatal(err)
		}
	}
	return g
}

// testJobSet has ReplicatedJob "workers" (3 Jobs, containers worker and helper, init container
// init) with templates, and ReplicatedJob "plain" without; edit, if not nil, changes the pod
// template of both.
func testJobSet(templates string, edit func(spec *corev1.PodSpec)) *jobsetv1alpha2.JobSet {
	rj := func(name string) *addontest.ReplicatedJobWrapper {
		w := addontest.ReplicatedJob(name).Replicas(3).InitContainers("init").Containers("worker", "helper")
		if edit != nil {
			edit(w.PodSpec())
		}
		return w
	}
	return addontest.JobSet("ns", "js").ReplicatedJobs(
		rj("plain"),
		rj("workers").JobAnnotation(contract.TemplatesAnnotationKey, templates),
	).Obj()
}

const path = "spec.replicatedJobs[1].template.metadata.annotations[resourceclaims.jobset-addons.io/templates]"

func TestValidateJobSet(t *testing.T) {
	const spec = `spec: {devices: {requests: [{name: r, exactly: {deviceClassName: c}}]}}`
	ownClaim := func(s *corev1.PodSpec) {
		s.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimTemplateName: ptr.To("gpu")}}
		s.Containers[0].Resources.Claims = []corev1.ResourceClaim{{Name: "gpu"}}
	}
	for _, tc := range []struct {
		name      string
		templates string
		edit      func(*corev1.PodSpec)
		want      []string // field: type
		samples   int
	}{
		{name: "valid", templates: `[{metadata: {name: a}, ` + spec + `, containers: [worker, init]}, {metadata: {name: b}, ` + spec + `, containers: []}]`, samples: 2},
		{name: "not yaml", templates: `[{`, want: []string{path + ": Invalid value"}},
		{name: "empty list", templates: `[]`, want: []string{path + ": Required value"}},
		// Samples: the templates whose specs the API server is asked about (those with a
		// valid name), so that spec errors come in the same response as the others.
		{name: "unknown field", templates: `[{metadata: {name: a}, ` + spec + `, container: [worker]}]`, want: []string{path + "[0].container: Unsupported value"}, samples: 1},
		{name: "unknown container", templates: `[{metadata: {name: a}, ` + spec + `, containers: [worker, trainer]}]`, want: []string{path + "[0].containers[1]: Invalid value"}, samples: 1},
		{name: "duplicate container", templates: `[{metadata: {name: a}, ` + spec + `, containers: [worker, worker]}]`, want: []string{path + "[0].containers[1]: Duplicate value"}, samples: 1},
		{name: "name twice", templates: `[{metadata: {name: a}, ` + spec + `}, {metadata: {name: a}, ` + spec + `}]`, want: []string{path + "[1].metadata.name: Duplicate value"}, samples: 1},
		{name: "bad name", templates: `[{metadata: {name: A_B}, ` + spec + `}]`, want: []string{path + "[0].metadata.name: Invalid value"}},
		{name: "namespace", templates: `[{metadata: {name: a, namespace: x}, ` + spec + `}]`, want: []string{path + "[0].metadata.namespace: Forbidden"}, samples: 1},
		{name: "retention", templates: `[{metadata: {name: a}, ` + spec + `, whenJobFinished: Keep}]`, want: []string{path + "[0].whenJobFinished: Unsupported value"}, samples: 1},
		{name: "clash, same container", templates: `[{metadata: {name: gpu}, ` + spec + `, containers: [worker]}]`, edit: ownClaim, want: []string{path + "[0].metadata.name: Invalid value"}, samples: 1},
		{name: "clash, all containers", templates: `[{metadata: {name: gpu}, ` + spec + `}]`, edit: ownClaim, want: []string{path + "[0].metadata.name: Invalid value"}, samples: 1},
		{name: "clash, other container: the pod's claim wins", templates: `[{metadata: {name: gpu}, ` + spec + `, containers: [helper]}]`, edit: ownClaim, samples: 1},
		{name: "name too long", templates: `[{metadata: {name: ` + strings.Repeat("a", 63) + `}, ` + spec + `}]`, samples: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			js := testJobSet(tc.templates, tc.edit)
			errs, samples := validateJobSet(js)
			if got := summary(errs); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("errors %v\nwant %v\nfull: %v", got, tc.want, errs)
			}
			if len(samples) != tc.samples {
				t.Errorf("%d samples, want %d", len(samples), tc.samples)
			}
		})
	}
}

func TestValidateJobSetNameTooLong(t *testing.T) {
	js := testJobSet(`[{metadata: {name: `+strings.Repeat("a", 63)+`}, spec: {}}]`, nil)
	js.Name = strings.Repeat("j", 200)
	errs, _ := validateJobSet(js)
	if got := summary(errs); !reflect.DeepEqual(got, []string{path + "[0].metadata.name: Invalid value"}) {
		t.Errorf("errors %v", errs)
	}
}

// TestValidateJobSetOver256Pods: a Job of more than 256 pods sharing per-Job claims is refused,
// with the reason, unless the claims go on the Job's PodGroup (scheduler kubernetes, one Job
// alone in its stage, at most 4 templates), where podgroups judges whether the apiserver keeps
// them.
func TestValidateJobSetOver256Pods(t *testing.T) {
	const one = `[{metadata: {name: a}, spec: {}}]`
	const five = `[{metadata: {name: a}, spec: {}}, {metadata: {name: b}, spec: {}}, {metadata: {name: c}, spec: {}}, {metadata: {name: d}, spec: {}}, {metadata: {name: e}, spec: {}}]`
	for _, tc := range []struct {
		name               string
		templates          string
		pods, replicas     int32
		scheduler, inOrder bool
		composite          bool
		refused            bool
	}{
		{name: "256 pods", templates: one, pods: 256, replicas: 3},
		{name: "257 pods, no PodGroup", templates: one, pods: 257, replicas: 1, refused: true},
		{name: "300 pods, one Job alone in its stage, scheduler kubernetes", templates: one, pods: 300, replicas: 1, scheduler: true, inOrder: true},
		{name: "300 pods, one Job sharing its stage (not sequenced)", templates: one, pods: 300, replicas: 1, scheduler: true, refused: true},
		{name: "300 pods in each of 3 Jobs, scheduler kubernetes", templates: one, pods: 300, replicas: 3, scheduler: true, inOrder: true, refused: true},
		{name: "300 pods, 5 templates: more than a PodGroup lists", templates: five, pods: 300, replicas: 1, scheduler: true, inOrder: true, refused: true},
		{name: "300 pods in each of 3 Jobs, composite: a PodGroup per Job", templates: one, pods: 300, replicas: 3, scheduler: true, composite: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			js := testJobSet(tc.templates, nil)
			rj := &js.Spec.ReplicatedJobs[1]
			rj.Replicas = tc.replicas
			rj.Template.Spec.Parallelism = ptr.To(tc.pods)
			js.Annotations = map[string]string{}
			if tc.scheduler {
				js.Annotations[contract.SchedulerAnnotationKey] = "kubernetes"
			}
			if tc.inOrder {
				js.Annotations[contract.ExecutionPolicyAnnotationKey] = "InOrder"
			}
			if tc.composite {
				js.Annotations[contract.CompositeAnnotationKey] = "true"
			}
			errs, _ := validateJobSet(js)
			var want []string
			if tc.refused {
				want = []string{path + ": Forbidden"}
			}
			if got := summary(errs); !reflect.DeepEqual(got, want) {
				t.Errorf("errors %v\nwant %v\nfull: %v", got, want, errs)
			}
			if tc.refused && !strings.Contains(errs.ToAggregate().Error(), "serves at most 256") {
				t.Errorf("the refusal does not say why: %v", errs)
			}
		})
	}
}

func summary(errs field.ErrorList) []string {
	var out []string
	for _, e := range errs {
		out = append(out, e.Field+": "+e.Type.String())
	}
	return out
}

func TestValidateUpdate(t *testing.T) {
	w := &JobSetWebhook{Gates: gates(t, true)}
	old := testJobSet(`[{metadata: {name: a}, spec: {}}]`, nil)
	same := old.DeepCopy()
	if _, err := w.ValidateUpdate(context.Background(), old, same); err != nil {
		t.Errorf("unchanged: %v", err)
	}
	changed := old.DeepCopy()
	changed.Spec.ReplicatedJobs[1].Template.Annotations[contract.TemplatesAnnotationKey] = `[{metadata: {name: b}, spec: {}}]`
	added := old.DeepCopy()
	added.Spec.ReplicatedJobs[0].Template.Annotations = map[string]string{contract.TemplatesAnnotationKey: `[]`}
	for name, js := range map[string]*jobsetv1alpha2.JobSet{"changed": changed, "added": added} {
		_, err := w.ValidateUpdate(context.Background(), old, js)
		if err == nil || !strings.Contains(err.Error(), "annotations[resourceclaims.jobset-addons.io/templates]: Forbidden: is immutable") {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestValidateCreateGateOff(t *testing.T) {
	w := &JobSetWebhook{Gates: gates(t, false)}
	warnings, err := w.ValidateCreate(context.Background(), testJobSet(`[{`, nil))
	if err != nil || len(warnings) != 1 || !strings.Contains(warnings[0], "feature gate JobSetResourceClaimTemplates is off") {
		t.Errorf("warnings %v, err %v", warnings, err)
	}
}

// jobRequest is the admission request for job, serialized without the fields Go would add
// (a container without resources has no "resources" key, as a client may send it).
func jobRequest(t testing.TB, job *batchv1.Job) admission.Request {
	raw, err := json.Marshal(job)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	for _, list := range []string{"containers", "initContainers"} {
		cs, _ := m["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)[list].([]any)
		for _, c := range cs {
			if r, ok := c.(map[string]any)["resources"].(map[string]any); ok && len(r) == 0 {
				delete(c.(map[string]any), "resources")
			}
		}
	}
	raw, _ = json.Marshal(m)
	return admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		Operation: admissionv1.Create, Namespace: "ns", Object: runtime.RawExtension{Raw: raw},
	}}
}

// testJob is Job 0 of testJobSet's ReplicatedJob workers, as upstream JobSet creates it.
func testJob(templates string) *batchv1.Job {
	return addontest.Job(testJobSet(templates, nil), "workers", 0).Obj()
}

func apply(t *testing.T, req admission.Request, resp admission.Response) *batchv1.Job {
	t.Helper()
	data, err := json.Marshal(resp.Patches)
	if err != nil {
		t.Fatal(err)
	}
	patch, err := jsonpatchapply.DecodePatch(data)
	if err != nil {
		t.Fatal(err)
	}
	out, err := patch.Apply(req.Object.Raw)
	if err != nil {
		t.Fatalf("applying %s: %v", data, err)
	}
	job := &batchv1.Job{}
	if err := json.Unmarshal(out, job); err != nil {
		t.Fatal(err)
	}
	return job
}

func TestJobWebhook(t *testing.T) {
	w := &JobWebhook{Gates: gates(t, true)}
	job := testJob(`[{metadata: {name: imex}, spec: {}, containers: [worker]}, {metadata: {name: data}, spec: {}}]`)
	req := jobRequest(t, job)
	resp := w.Handle(context.Background(), req)
	if !resp.Allowed || len(resp.Warnings) > 0 {
		t.Fatalf("response %+v", resp)
	}
	got := apply(t, req, resp).Spec.Template.Spec
	wantPod := []corev1.PodResourceClaim{{Name: "imex", ResourceClaimName: ptr.To("js-workers-0-imex")}, {Name: "data", ResourceClaimName: ptr.To("js-workers-0-data")}}
	if !reflect.DeepEqual(got.ResourceClaims, wantPod) {
		t.Errorf("resourceClaims %+v", got.ResourceClaims)
	}
	want := map[string][]corev1.ResourceClaim{
		"worker": {{Name: "imex"}, {Name: "data"}}, "helper": {{Name: "data"}}, "init": {{Name: "data"}},
	}
	for _, c := range append(got.InitContainers, got.Containers...) {
		if !reflect.DeepEqual(c.Resources.Claims, want[c.Name]) {
			t.Errorf("container %s: claims %+v, want %+v", c.Name, c.Resources.Claims, want[c.Name])
		}
	}
}

func TestJobWebhookCases(t *testing.T) {
	shadowing := testJob(`[{metadata: {name: gpu}, spec: {}, containers: [helper]}]`)
	shadowing.Spec.Template.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimTemplateName: ptr.To("t")}}
	plain := testJob(`x`)
	delete(plain.Annotations, contract.TemplatesAnnotationKey)
	for _, tc := range []struct {
		name    string
		job     *batchv1.Job
		on      bool
		allowed bool
		patches int
		message string // in a warning or the denial
	}{
		{name: "shadowed", job: shadowing, on: true, allowed: true, message: `has its own resourceClaims entry "gpu", which wins`},
		{name: "invalid", job: testJob(`[{metadata: {name: a}, spec: {}, bad: 1}]`), on: true, message: "metadata.annotations[resourceclaims.jobset-addons.io/templates][0].bad"},
		{name: "gate off", job: testJob(`[{metadata: {name: a}, spec: {}}]`), allowed: true, message: "feature gate JobSetResourceClaimTemplates is off"},
		{name: "no templates", job: plain, on: true, allowed: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := (&JobWebhook{Gates: gates(t, tc.on)}).Handle(context.Background(), jobRequest(t, tc.job))
			if resp.Allowed != tc.allowed || len(resp.Patches) != tc.patches {
				t.Errorf("allowed %v with %d patches, want %v with %d", resp.Allowed, len(resp.Patches), tc.allowed, tc.patches)
			}
			text := strings.Join(resp.Warnings, "\n")
			if resp.Result != nil {
				text += resp.Result.Message
			}
			if !strings.Contains(text, tc.message) {
				t.Errorf("response says %q, want %q", text, tc.message)
			}
		})
	}
}

func BenchmarkJobWebhook(b *testing.B) {
	w := &JobWebhook{Gates: gates(b, true)}
	req := jobRequest(b, testJob(`[{metadata: {name: imex}, spec: {devices: {requests: [{name: r, exactly: {deviceClassName: c}}]}}, containers: [worker]}, {metadata: {name: data}, spec: {}}]`))
	for b.Loop() {
		if resp := w.Handle(context.Background(), req); !resp.Allowed {
			b.Fatal(resp.Result)
		}
	}
}
