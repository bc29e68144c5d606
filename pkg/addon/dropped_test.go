package addon

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/jobset-addons/jobset-addons/pkg/addon/addontest"
)

// TestDropped: what was set in the spec sent and is missing from the answer, wherever it is;
// not what was sent unset, what the API server added or what it changed.
func TestDropped(t *testing.T) {
	obj := func(spec any) client.Object {
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Thing"}}
		if spec != nil {
			u.Object["spec"] = spec
		}
		return u
	}
	type m = map[string]any
	type l = []any
	for _, tc := range []struct {
		name         string
		sent, answer any
		want         []string
	}{
		{name: "nothing dropped", sent: m{"a": "x", "b": m{"c": 1}}, answer: m{"a": "x", "b": m{"c": 1}}},
		{name: "a field", sent: m{"a": "x", "b": 2}, answer: m{"a": "x"}, want: []string{"spec.b"}},
		{name: "a field set to null", sent: m{"a": "x"}, answer: m{"a": nil}, want: []string{"spec.a"}},
		{name: "nested fields, in order", sent: m{"z": m{"y": m{"x": true, "w": "v"}}, "a": m{"b": l{"c"}}}, answer: m{"z": m{"y": m{}}, "a": m{}},
			want: []string{"spec.a.b", "spec.z.y.w", "spec.z.y.x"}},
		{name: "a whole object", sent: m{"a": m{"b": m{"c": "d"}}}, answer: m{}, want: []string{"spec.a"}},
		{name: "in list elements", sent: m{"r": l{m{"n": "a", "t": l{m{"k": "v"}}}, m{"n": "b"}, m{"n": "c", "t": l{"x"}}}},
			answer: m{"r": l{m{"n": "a"}, m{"n": "b"}, m{"n": "c"}}}, want: []string{"spec.r[0].t", "spec.r[2].t"}},
		{name: "lists of other lengths are not compared", sent: m{"r": l{m{"n": "a", "t": "x"}, m{"n": "b"}}}, answer: m{"r": l{m{"n": "a"}}}},
		{name: "unset values sent", sent: m{"a": false, "b": 0, "c": "", "d": m{}, "e": l{}, "f": nil, "g": m{"h": false}}, answer: m{}},
		{name: "defaults added", sent: m{"a": "x"}, answer: m{"a": "x", "mode": "ExactCount", "b": m{"count": 1}}},
		{name: "values changed", sent: m{"q": "1000m", "b": true, "o": m{"k": "v"}, "s": "x"}, answer: m{"q": "1", "b": false, "o": "flattened", "s": m{"k": "v"}}},
		{name: "map keys that are not field names", sent: m{"requests": m{"example.com/gpu": "1", "storage": "1Gi", "a-b": "c"}}, answer: m{"requests": m{}},
			want: []string{"spec.requests[a-b]", "spec.requests[example.com/gpu]", "spec.requests.storage"}},
		{name: "the whole spec", sent: m{"a": "x"}, answer: nil, want: []string{"spec"}},
		{name: "no spec sent", sent: nil, answer: m{"a": "x"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, Dropped(obj(tc.sent), obj(tc.answer))); diff != "" {
				t.Errorf("Dropped (-want +got):\n%s", diff)
			}
		})
	}
}

// tolerating is a claim whose device request tolerates a taint.
func tolerating(name string) *resourcev1.ResourceClaim {
	return &resourcev1.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name},
		Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{Requests: []resourcev1.DeviceRequest{{
			Name: "r", Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: "c", Tolerations: []resourcev1.DeviceToleration{{Key: "k", Operator: resourcev1.DeviceTolerationOpExists}}},
		}}}},
	}
}

// dropTolerations is a client whose dry runs accept every object, and drop a claim's first
// request's tolerations, as Kubernetes 1.35 does without DRADeviceTaints; it counts them.
func dropTolerations(t *testing.T, calls *int, mu *sync.Mutex, release <-chan struct{}) client.Client {
	return fake.NewClientBuilder().WithInterceptorFuncs(interceptor.Funcs{
		Create: func(_ context.Context, _ client.WithWatch, obj client.Object, _ ...client.CreateOption) error {
			mu.Lock()
			*calls++
			mu.Unlock()
			if release != nil {
				<-release
			}
			if err := addontest.DropField(obj, "spec", "devices", "requests", 0, "exactly", "tolerations"); err != nil {
				t.Error(err)
			}
			return nil
		},
	}).Build()
}

// TestDroppedTypedObject: a typed object, answered as controller-runtime decodes it.
func TestDroppedTypedObject(t *testing.T) {
	sent := tolerating("a")
	answer := sent.DeepCopy()
	if err := addontest.DropField(answer, "spec", "devices", "requests", 0, "exactly", "tolerations"); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"spec.devices.requests[0].exactly.tolerations"}, Dropped(sent, answer)); diff != "" {
		t.Errorf("Dropped (-want +got):\n%s", diff)
	}
	if got := Dropped(sent, sent.DeepCopy()); got != nil {
		t.Errorf("Dropped of the same object: %q", got)
	}
}

// TestCheckDropped: an object made from its template that the API server accepts without some
// of its fields admits the JobSet with a Warning naming them under the template's path, for
// every JobSet (not remembered); without TemplateSpec, or without a drop, nothing is told and
// the acceptance is remembered.
func TestCheckDropped(t *testing.T) {
	var mu sync.Mutex
	calls := 0
	d := &DryRunner{Client: dropTolerations(t, &calls, &mu, nil), Name: "resourceclaims", Remember: time.Hour}
	path := field.NewPath("metadata", "annotations").Key("resourceclaims.jobset-addons.io/templates").Index(0)
	check := func(o client.Object, key string, template bool) (int, []string) {
		before := calls
		errs, warnings := d.Check(context.Background(), []DryRun{{Path: path, What: "the ResourceClaim " + o.GetName(), Object: o, Key: key, TemplateSpec: template}})
		if len(errs) > 0 {
			t.Errorf("refused: %v", errs)
		}
		return calls - before, warnings
	}
	want := []string{"resourceclaims: the API server dropped spec.devices.requests[0].exactly.tolerations of the ResourceClaim js-w-0-a " +
		"(metadata.annotations[resourceclaims.jobset-addons.io/templates][0].spec.devices.requests[0].exactly.tolerations): " +
		"a field of a feature it has turned off or does not know, or that a mutating admission webhook removes; " +
		"the JobSet is admitted and the ResourceClaim js-w-0-a is made without it. Turn that feature gate on in the API server, or remove the field from the template"}
	for round := range 2 {
		n, warnings := check(tolerating("js-w-0-a"), "k", true)
		if diff := cmp.Diff(want, warnings); diff != "" || n != 1 {
			t.Errorf("round %d: %d dry runs, want 1; warnings (-want +got):\n%s", round, n, diff)
		}
	}
	plain := tolerating("js-w-0-b")
	plain.Spec.Devices.Requests[0].Exactly.Tolerations = nil
	for i, tc := range []struct {
		obj      client.Object
		key      string
		template bool
	}{{obj: plain, key: "plain", template: true}, {obj: tolerating("js-w-0-c"), key: "not ours", template: false}} {
		for round := range 2 {
			n, warnings := check(tc.obj, tc.key, tc.template)
			if len(warnings) > 0 || n != 1-round {
				t.Errorf("case %d, round %d: %d dry runs, want %d; warnings %q", i, round, n, 1-round, warnings)
			}
		}
	}
}

// TestCheckDroppedInFlight: checks of one Key under way at once share one dry run, and each
// takes its Warning; the next check dry-runs again.
func TestCheckDroppedInFlight(t *testing.T) {
	var mu sync.Mutex
	calls := 0
	release := make(chan struct{})
	d := &DryRunner{Client: dropTolerations(t, &calls, &mu, release), Name: "resourceclaims", Remember: time.Minute}
	check := func(name string) []string {
		_, warnings := d.Check(context.Background(), []DryRun{{Path: field.NewPath("a"), What: "the ResourceClaim " + name, Object: tolerating(name), Key: "k", TemplateSpec: true}})
		return warnings
	}
	together(5, release, func(i int) {
		name := fmt.Sprint("p", i)
		if w := check(name); len(w) != 1 || !strings.Contains(w[0], "dropped spec.devices.requests[0].exactly.tolerations of the ResourceClaim "+name+" (a.spec.") {
			t.Errorf("%s: warnings %q", name, w)
		}
	})
	if calls != 1 {
		t.Errorf("%d dry runs, want 1", calls)
	}
	if w := check("p5"); len(w) != 1 || calls != 2 {
		t.Errorf("after: %d dry runs, want 2; warnings %q", calls, w)
	}
}
