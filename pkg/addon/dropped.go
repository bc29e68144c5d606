package addon

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Dropped are the fields of sent's spec that the API server dropped from answer, its answer to
// sent's create: a field set in sent (not null, false, 0, "", an empty list, or an object of
// such values) that answer does not have, or has as null. An API server drops so, without refusing the object, the fields of a feature
// whose gate it has turned off (a device request's tolerations on Kubernetes 1.35, a PVC's
// volumeAttributesClassName where VolumeAttributesClass is off), and a CRD's pruning the
// fields its schema does not know; a mutating admission webhook may remove one too.
//
// What the API server adds (its defaults) is not a drop, nor a value it changed or normalised
// (a quantity rewritten, a field of another type). Lists are compared element by element when
// they are as long in both, and not at all when they are not (an element removed or added
// cannot be told apart from one changed). The paths are as the API server writes a cause's
// field (spec.devices.requests[0].exactly.tolerations), in the order of the keys; a map's key
// that is not a field name (a letter, then letters and digits) is written in brackets
// (spec.resources.requests[example.com/foo]), one that looks like one as a field.
// Nil when the objects do not encode as JSON objects.
func Dropped(sent, answer client.Object) []string {
	s, ok := specOf(sent)
	if !ok {
		return nil
	}
	a, ok := specOf(answer)
	if !ok {
		return nil
	}
	return droppedFields(s, a, "spec", nil)
}

// specOf is obj's spec as generic JSON (maps, lists, strings, numbers, booleans, nil); nil when
// it has none.
func specOf(obj client.Object) (any, bool) {
	raw, err := json.Marshal(obj)
	if err != nil {
		return nil, false
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, false
	}
	return m["spec"], true
}

// droppedFields appends to out the paths under path of what sent has and answer lacks
// (Dropped).
func droppedFields(sent, answer any, path string, out []string) []string {
	if unset(sent) {
		return out
	}
	if answer == nil {
		return append(out, path)
	}
	switch s := sent.(type) {
	case map[string]any:
		a, ok := answer.(map[string]any)
		if !ok {
			return out // changed
		}
		keys := make([]string, 0, len(s))
		for k := range s {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			out = droppedFields(s[k], a[k], childPath(path, k), out)
		}
	case []any:
		a, ok := answer.([]any)
		if !ok || len(a) != len(s) {
			return out
		}
		for i := range s {
			out = droppedFields(s[i], a[i], fmt.Sprintf("%s[%d]", path, i), out)
		}
	}
	return out
}

// unset tells whether v, a generic JSON value, is its type's zero value (what omitempty leaves
// out), or an object of such values only (a struct of unset fields, which omitempty keeps).
func unset(v any) bool {
	switch v := v.(type) {
	case nil:
		return true
	case bool:
		return !v
	case float64:
		return v == 0
	case string:
		return v == ""
	case map[string]any:
		for _, e := range v {
			if !unset(e) {
				return false
			}
		}
		return true
	case []any:
		return len(v) == 0
	}
	return false
}

// childPath is the path of key k under path: .k for a field's name, [k] for any other key.
func childPath(path, k string) string {
	if fieldName(k) {
		return path + "." + k
	}
	return path + "[" + k + "]"
}

// fieldName tells whether k is written as a field's name: an ASCII letter, then ASCII letters
// and digits.
func fieldName(k string) bool {
	if k == "" {
		return false
	}
	for i, r := range k {
		letter := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z'
		if !letter && (i == 0 || r < '0' || r > '9') {
			return false
		}
	}
	return true
}

// droppedWarning is the Warning of a JobSet admitted although the API server drops fields of
// o, an object made from the user's template, as Dropped finds them (spec paths of o): each
// is named in o and under o.Path.
func droppedWarning(addon string, o *DryRun, fields []string) string {
	inTemplate := make([]string, len(fields))
	for i, f := range fields {
		inTemplate[i] = JoinPath(o.Path, f)
	}
	what, it, them := "a field", "it", "that feature gate"
	if len(fields) > 1 {
		what, it, them = "fields", "them", "those feature gates"
	}
	return fmt.Sprintf("%s: the API server dropped %s of %s (%s): %s of a feature it has turned off or does not know, or that a mutating admission webhook removes; the JobSet is admitted and %s is made without %s. Turn %s on in the API server, or remove the %s from the template",
		addon, strings.Join(fields, ", "), o.What, strings.Join(inTemplate, ", "), what, o.What, it, them, strings.TrimPrefix(what, "a "))
}
