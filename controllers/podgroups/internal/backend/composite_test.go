package backend

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	schedulingv1alpha3 "k8s.io/api/scheduling/v1alpha3"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/jobset-addons/jobset-addons/pkg/addon/checks/podgroups"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// TestServedCompositeKind: the composite gang's CompositePodGroup is written at
// scheduling.k8s.io/v1beta1 where the API server serves it (Kubernetes 1.38 with the
// CompositePodGroup gate, whether or not it also serves v1alpha3), at v1alpha3 where only that
// is (1.37), and not at all where neither is; a discovery failure is an error, not "not served".
func TestServedCompositeKind(t *testing.T) {
	beta, alpha := CompositeKinds[0], CompositeKinds[1]
	if beta.GroupVersion().String() != "scheduling.k8s.io/v1beta1" || alpha.GroupVersion().String() != "scheduling.k8s.io/v1alpha3" {
		t.Fatalf("CompositeKinds %v: want v1beta1 first, then v1alpha3", CompositeKinds)
	}
	podGroup := schema.GroupVersionKind{Group: "scheduling.k8s.io", Version: "v1beta1", Kind: "PodGroup"}
	mapper := func(served ...schema.GroupVersionKind) apimeta.RESTMapper {
		m := apimeta.NewDefaultRESTMapper(nil)
		for _, gvk := range served {
			m.Add(gvk, apimeta.RESTScopeNamespace)
		}
		return m
	}
	for name, tc := range map[string]struct {
		mapper apimeta.RESTMapper
		want   schema.GroupVersionKind
	}{
		"1.38, both served":         {mapper(podGroup, alpha, beta), beta},
		"1.38, v1beta1 alone":       {mapper(podGroup, beta), beta},
		"1.37, v1alpha3":            {mapper(podGroup, alpha), alpha},
		"gate off: neither":         {mapper(podGroup), schema.GroupVersionKind{}},
		"no Workload API at all":    {mapper(), schema.GroupVersionKind{}},
		"1.38, v1alpha3 turned off": {mapper(beta), beta},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := ServedCompositeKind(tc.mapper)
			if err != nil || got != tc.want {
				t.Errorf("ServedCompositeKind = %v, %v; want %v", got, err, tc.want)
			}
		})
	}
	failing := apimeta.MultiRESTMapper{failingMapper{}}
	if got, err := ServedCompositeKind(failing); err == nil {
		t.Errorf("discovery failing: ServedCompositeKind = %v, nil; want an error", got)
	}
}

// failingMapper fails every lookup as an unreachable API server does.
type failingMapper struct{ apimeta.RESTMapper }

func (failingMapper) RESTMapping(schema.GroupKind, ...string) (*apimeta.RESTMapping, error) {
	return nil, errors.New("connection refused")
}

// TestCompositeObject: the CompositePodGroup written at either version holds the same fields,
// its spec hash included (one made at v1alpha3 before an upgrade to 1.38 is still ours and
// unchanged when read at v1beta1), under that version's apiVersion.
func TestCompositeObject(t *testing.T) {
	js := jobSet("train", kv(contract.SchedulerAnnotationKey, "kubernetes", contract.CompositeAnnotationKey, "true"), "a", "b").Obj()
	_, gangs := read(t, js)
	cpg, err := Kubernetes{}.BuildComposite(js, gangs[0], podgroups.Settings{}, "")
	if err != nil {
		t.Fatal(err)
	}
	var objs []map[string]any
	for _, gvk := range CompositeKinds {
		u, err := CompositeObject(cpg, gvk)
		if err != nil {
			t.Fatal(err)
		}
		if u.GetAPIVersion() != gvk.GroupVersion().String() || u.GetKind() != "CompositePodGroup" || !Ours(u, js) {
			t.Errorf("%s: apiVersion %s kind %s, ours %v", gvk, u.GetAPIVersion(), u.GetKind(), Ours(u, js))
		}
		back := &schedulingv1alpha3.CompositePodGroup{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, back); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(cpg.Spec, back.Spec); diff != "" || back.Annotations[contract.PodGroupSpecHashAnnotationKey] != cpg.Annotations[contract.PodGroupSpecHashAnnotationKey] {
			t.Errorf("%s: spec (-built +written):\n%s\nhash %q, want %q", gvk, diff, back.Annotations[contract.PodGroupSpecHashAnnotationKey], cpg.Annotations[contract.PodGroupSpecHashAnnotationKey])
		}
		delete(u.Object, "apiVersion")
		objs = append(objs, u.Object)
	}
	if diff := cmp.Diff(objs[0], objs[1]); diff != "" {
		t.Errorf("v1beta1 and v1alpha3 objects differ beyond apiVersion (-v1beta1 +v1alpha3):\n%s", diff)
	}
}
