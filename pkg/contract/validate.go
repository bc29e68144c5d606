package contract

import (
	"fmt"
	"slices"
	"strings"

	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// parseEnum checks that value is one of allowed, or an alias of one, and returns the canonical
// value. An empty value is Required; any other value is NotSupported, listing allowed.
func parseEnum[T ~string](value string, path *field.Path, allowed []T, aliases map[string]T) (T, field.ErrorList) {
	if value == "" {
		return "", field.ErrorList{field.Required(path, "must be one of "+quoteList(allowed))}
	}
	if slices.Contains(allowed, T(value)) {
		return T(value), nil
	}
	if v, ok := aliases[value]; ok {
		return v, nil
	}
	return "", field.ErrorList{field.NotSupported(path, value, allowed)}
}

func quoteList[T ~string](vs []T) string {
	q := make([]string, len(vs))
	for i, v := range vs {
		q[i] = fmt.Sprintf("%q", v)
	}
	return strings.Join(q, ", ")
}

// validateDNSLabel checks a required name that must be a DNS-1123 label.
func validateDNSLabel(name string, path *field.Path) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(path, "")}
	}
	var errs field.ErrorList
	for _, msg := range validation.IsDNS1123Label(name) {
		errs = append(errs, field.Invalid(path, name, msg))
	}
	return errs
}

// validateUniqueNames checks a list of required DNS-1123 labels for emptiness, format and
// repeats, at path[i] (or path[i].<child> when child is not empty).
func validateUniqueNames(names []string, path *field.Path, child string) field.ErrorList {
	var errs field.ErrorList
	seen := map[string]bool{}
	for i, n := range names {
		p := path.Index(i)
		if child != "" {
			p = p.Child(child)
		}
		errs = append(errs, validateDNSLabel(n, p)...)
		if n != "" && seen[n] {
			errs = append(errs, field.Duplicate(p, n))
		}
		seen[n] = true
	}
	return errs
}

// validateTemplateMetadata checks the metadata of an object template (a PVC template, a
// ResourceClaim template): a name that is a DNS-1123 label, valid labels and annotations, and
// nothing else — the namespace, owners and the like are the controller's to set.
func validateTemplateMetadata(meta metav1.ObjectMeta, path *field.Path) field.ErrorList {
	errs := validateDNSLabel(meta.Name, path.Child("name"))
	errs = append(errs, metav1validation.ValidateLabels(meta.Labels, path.Child("labels"))...)
	errs = append(errs, apivalidation.ValidateAnnotations(meta.Annotations, path.Child("annotations"))...)
	forbidden := []struct {
		name string
		set  bool
	}{
		{"namespace", meta.Namespace != ""},
		{"generateName", meta.GenerateName != ""},
		{"uid", meta.UID != ""},
		{"resourceVersion", meta.ResourceVersion != ""},
		{"generation", meta.Generation != 0},
		{"selfLink", meta.SelfLink != ""},
		{"creationTimestamp", !meta.CreationTimestamp.IsZero()},
		{"deletionTimestamp", meta.DeletionTimestamp != nil},
		{"deletionGracePeriodSeconds", meta.DeletionGracePeriodSeconds != nil},
		{"ownerReferences", meta.OwnerReferences != nil},
		{"finalizers", meta.Finalizers != nil},
		{"managedFields", meta.ManagedFields != nil},
	}
	for _, f := range forbidden {
		if f.set {
			errs = append(errs, field.Forbidden(path.Child(f.name), "a template's metadata may set only name, labels and annotations"))
		}
	}
	return errs
}

// validateTypeMeta accepts an empty apiVersion and kind, or the given ones.
func validateTypeMeta(tm metav1.TypeMeta, path *field.Path, apiVersion, kind string) field.ErrorList {
	var errs field.ErrorList
	if tm.APIVersion != "" && tm.APIVersion != apiVersion {
		errs = append(errs, field.NotSupported(path.Child("apiVersion"), tm.APIVersion, []string{apiVersion}))
	}
	if tm.Kind != "" && tm.Kind != kind {
		errs = append(errs, field.NotSupported(path.Child("kind"), tm.Kind, []string{kind}))
	}
	return errs
}

// requireList reports a list annotation whose value is empty or null.
func requireList[T any](list []T, path *field.Path, what string) field.ErrorList {
	if list == nil {
		return field.ErrorList{field.Required(path, "must be a list of "+what)}
	}
	return nil
}

// joinErrors returns the decoding errors followed by the validation errors, less those about a
// value that could not be decoded (at or under the path of a TypeInvalid or Invalid decoding
// error): a list item of the wrong type is not also reported as missing.
func joinErrors(decodeErrs, validationErrs field.ErrorList) field.ErrorList {
	var bad []string
	for _, e := range decodeErrs {
		if e.Type == field.ErrorTypeTypeInvalid || e.Type == field.ErrorTypeInvalid {
			bad = append(bad, e.Field)
		}
	}
	errs := decodeErrs
	for _, e := range validationErrs {
		if !slices.ContainsFunc(bad, func(b string) bool { return isPathUnder(e.Field, b) }) {
			errs = append(errs, e)
		}
	}
	return errs
}

// isPathUnder tells whether field path p is path prefix or a path under it.
func isPathUnder(p, prefix string) bool {
	return p == prefix || (strings.HasPrefix(p, prefix) && (p[len(prefix)] == '.' || p[len(prefix)] == '['))
}
