package addontest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"reflect"
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
// index; 403 quota exceeded; 409 AlreadyExists; a webhook that failed. A fuzzer that sets it
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
			switch h.Sum32() % 5 {
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
			}
			return nil
		},
	}).Build()
	return c
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
