package addontest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"reflect"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// DryRunClient is a client for an addon.DryRunner whose API server is a fake that answers each dry run, by a
// hash of the object, as a real one may: accepted; 422 Invalid with causes at fields named by
// the object's own label keys and annotation values (text the fuzzer controls) and at an
// index; 403 quota exceeded; 409 AlreadyExists; a webhook that failed; accepted without the
// first of its spec's fields (DropField), as a field of a turned-off feature. A fuzzer that sets it
// on a webhook feeds the dry-run path (its classification, its mapping of causes into the
// JobSet's paths, its Warnings) with what it makes of arbitrary JobSets.
func DryRunClient() client.Client {
	c := fake.NewClientBuilder().WithInterceptorFuncs(interceptor.Funcs{
		Create: func(_ context.Context, _ client.WithWatch, obj client.Object, _ ...client.CreateOption) error {
			raw, err := json.Marshal(obj)
			if err != nil {
				return err
			}
			h := fnv.New32a()
			_, _ = h.Write(raw)
			gk := obj.GetObjectKind().GroupVersionKind().GroupKind()
			gr := schema.GroupResource{Group: gk.Group, Resource: "objects"}
			switch h.Sum32() % 6 {
			case 1:
				var errs field.ErrorList
				for k, v := range obj.GetLabels() {
					errs = append(errs, field.Invalid(field.NewPath("metadata", "labels").Key(k), v, "refused"))
				}
				for _, v := range obj.GetAnnotations() {
					errs = append(errs, &field.Error{Type: field.ErrorTypeRequired, Field: v, Detail: v})
				}
				errs = append(errs, &field.Error{Type: field.ErrorTypeNotSupported, Field: "[0].spec", BadValue: raw[:min(len(raw), 40)]})
				return apierrors.NewInvalid(gk, obj.GetName(), errs)
			case 2:
				return apierrors.NewForbidden(gr, obj.GetName(), errors.New("exceeded quota: q"))
			case 3:
				return apierrors.NewAlreadyExists(gr, obj.GetName())
			case 4:
				return apierrors.NewInternalError(errors.New(`failed calling webhook "other.example.com": context deadline exceeded`))
			case 5:
				return dropFirst(obj, raw)
			}
			return nil
		},
	}).Build()
	return c
}

// dropFirst drops the first (by name) of the fields of obj's spec, raw its JSON.
func dropFirst(obj client.Object, raw []byte) error {
	var o struct{ Spec map[string]json.RawMessage }
	if err := json.Unmarshal(raw, &o); err != nil || len(o.Spec) == 0 {
		return nil
	}
	return DropField(obj, "spec", slices.Sorted(maps.Keys(o.Spec))[0])
}

// NamespaceTerminatingCreate is an interceptor's Create that answers every create as the API
// server does in a namespace being deleted: 403 Forbidden, with the NamespaceTerminating cause.
// tried, if set, is told each object it refused.
func NamespaceTerminatingCreate(tried func(client.Object)) func(context.Context, client.WithWatch, client.Object, ...client.CreateOption) error {
	return func(_ context.Context, _ client.WithWatch, obj client.Object, _ ...client.CreateOption) error {
		if tried != nil {
			tried(obj)
		}
		resource := strings.ToLower(reflect.TypeOf(obj).Elem().Name()) + "s" // a PodGroup's podgroups
		err := apierrors.NewForbidden(schema.GroupResource{Resource: resource}, obj.GetName(),
			fmt.Errorf("unable to create new content in namespace %s because it is being terminated", obj.GetNamespace()))
		err.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: corev1.NamespaceTerminatingCause, Field: "metadata.namespace"}}
		return err
	}
}

// DropField removes from obj the field at path (JSON keys, and indexes of lists: "spec",
// "devices", "requests", 0, "exactly", "tolerations"), as an API server drops a field of a
// feature it has turned off from the object it answers a create with. A path that obj does not
// have is left as it is.
func DropField(obj client.Object, path ...any) error {
	raw, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	var m any
	if err := json.Unmarshal(raw, &m); err != nil {
		return err
	}
	parent := m
	for i, p := range path {
		last := i == len(path)-1
		switch p := p.(type) {
		case string:
			o, ok := parent.(map[string]any)
			if !ok {
				return nil
			}
			if last {
				delete(o, p)
			}
			parent = o[p]
		case int:
			l, ok := parent.([]any)
			if !ok || p < 0 || p >= len(l) || last {
				return nil // a list keeps its length
			}
			parent = l[p]
		default:
			return fmt.Errorf("path element %v is neither a key nor an index", p)
		}
	}
	if raw, err = json.Marshal(m); err != nil {
		return err
	}
	// Decoded into a zeroed object, as controller-runtime decodes an answer.
	v := reflect.ValueOf(obj).Elem()
	v.Set(reflect.Zero(v.Type()))
	return json.Unmarshal(raw, obj)
}
