package contract

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// fieldErr is what the tests assert of a field.Error: its type and its full path.
type fieldErr struct {
	Type  field.ErrorType
	Field string
}

func errsOf(list field.ErrorList) []fieldErr {
	var out []fieldErr
	for _, e := range list {
		out = append(out, fieldErr{e.Type, e.Field})
	}
	return out
}

// Shorthands for the expected error types.
const (
	required     = field.ErrorTypeRequired
	invalid      = field.ErrorTypeInvalid
	typeInvalid  = field.ErrorTypeTypeInvalid
	notSupported = field.ErrorTypeNotSupported
	duplicate    = field.ErrorTypeDuplicate
	forbidden    = field.ErrorTypeForbidden
	notFound     = field.ErrorTypeNotFound
)

// cmpOpts compares quantities and times by value.
var cmpOpts = []cmp.Option{
	cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 }),
	cmp.Comparer(func(a, b metav1.Time) bool { return a.Equal(&b) }),
}

// pvcTemplate builds a PVC template as the parser returns it.
func pvcTemplate(name, storage string, modes ...corev1.PersistentVolumeAccessMode) corev1.PersistentVolumeClaim {
	return corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: modes,
			Resources: corev1.VolumeResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(storage)},
			},
		},
	}
}

func ptrTo[T any](v T) *T { return &v }

// marshal writes a parsed value back as JSON, without HTML escaping, so that raw JSON kept by
// the value (runtime.RawExtension) comes back byte for byte.
func marshal(v any) (string, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "", err
	}
	return buf.String(), nil
}

// fuzzParser checks that parse never panics, and that a value it accepts, written back by
// format, is accepted again as the same value.
func fuzzParser[T any](f *testing.F, parse func(string, *field.Path) (T, field.ErrorList), format func(T) (string, error)) {
	path := field.NewPath("metadata", "annotations").Key("fuzz")
	f.Fuzz(func(t *testing.T, value string) {
		got, errs := parse(value, path)
		for _, e := range errs {
			if e.Field == "" || (e.Field != path.String() && !isPathUnder(e.Field, path.String())) {
				t.Fatalf("error outside the annotation's path: %v", e)
			}
		}
		if len(errs) > 0 {
			return
		}
		text, err := format(got)
		if err != nil {
			t.Fatalf("cannot write back %#v: %v", got, err)
		}
		again, errs := parse(text, path)
		if len(errs) > 0 {
			t.Fatalf("written back as %q, refused: %v", text, errs.ToAggregate())
		}
		if !equality.Semantic.DeepEqual(got, again) {
			t.Fatalf("written back as %q, parsed differently:\n%s", text, cmp.Diff(got, again, cmpOpts...))
		}
	})
}
