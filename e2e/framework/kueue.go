package framework

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// KueueObject is an object of Kueue's API (kueue.x-k8s.io/v1beta2) of the kind, namespace (""
// for a cluster-scoped kind), name and spec, unstructured: the suites do not import Kueue's
// module, which is built on another Kubernetes than this one.
func KueueObject(kind, ns, name string, spec map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	u.SetGroupVersionKind(schema.GroupVersionKind{Group: "kueue.x-k8s.io", Version: "v1beta2", Kind: kind})
	u.SetNamespace(ns)
	u.SetName(name)
	return u
}
