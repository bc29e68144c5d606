package contract

import (
	"bytes"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// JobSetAnnotationPath is the field path of the JobSet annotation key,
// metadata.annotations[key]: the path to give a parser of a JobSet annotation.
func JobSetAnnotationPath(key string) *field.Path {
	return field.NewPath("metadata", "annotations").Key(key)
}

// ReplicatedJobAnnotationPath is the field path of the annotation key of the Job template of the
// i-th ReplicatedJob, spec.replicatedJobs[i].template.metadata.annotations[key].
func ReplicatedJobAnnotationPath(i int, key string) *field.Path {
	return field.NewPath("spec", "replicatedJobs").Index(i).Child("template", "metadata", "annotations").Key(key)
}

// decodeStrict decodes an annotation value, YAML or JSON, into out (a non-nil pointer) and
// returns every problem found as a field error under path:
//   - text that is neither YAML nor JSON: Invalid at path;
//   - a key given twice in one object: Duplicate at the key's path (in YAML input, whose
//     duplicates are found before the document has paths, at path, with the line in the detail);
//   - a key that the target type does not have: NotSupported at the key's path, listing the
//     known keys;
//   - a value of the wrong JSON type: TypeInvalid at the value's path;
//   - a value its type refuses (a malformed quantity, say): Invalid at the value's path.
//
// Decoding goes on after each problem, so that all of them are reported. Object keys are
// case-sensitive. Whatever decoded is left in out; the caller validates it further.
func decodeStrict(value string, path *field.Path, out any) field.ErrorList {
	data, errs := toJSON(value, path)
	if data == nil {
		return errs
	}
	d := decoder{}
	d.decode(data, reflect.ValueOf(out).Elem(), path)
	return append(errs, d.errs...)
}

// yamlDuplicateKey matches one duplicate-key complaint of the strict YAML parser.
var yamlDuplicateKey = regexp.MustCompile(`line (\d+): key (".*") already set in map`)

// toJSON turns an annotation value into compact JSON. JSON input is kept as it is (compacted),
// so that the decoder sees its duplicate keys with their paths; anything else is read as YAML.
func toJSON(value string, path *field.Path) ([]byte, field.ErrorList) {
	var buf bytes.Buffer
	if json.Valid([]byte(value)) {
		if err := json.Compact(&buf, []byte(value)); err == nil {
			return buf.Bytes(), nil
		}
	}
	data, strictErr := yaml.YAMLToJSONStrict([]byte(value))
	if strictErr == nil {
		return data, nil
	}
	data, err := yaml.YAMLToJSON([]byte(value))
	if err != nil {
		return nil, field.ErrorList{field.Invalid(path, field.OmitValueType{}, "must be YAML or JSON: "+err.Error())}
	}
	// Only the strict parser failed: the document repeats keys.
	var errs field.ErrorList
	for _, m := range yamlDuplicateKey.FindAllStringSubmatch(strictErr.Error(), -1) {
		key := strings.Trim(m[2], `"`)
		e := field.Duplicate(path, key)
		e.Detail = fmt.Sprintf("key %s repeated on line %s", m[2], m[1])
		errs = append(errs, e)
	}
	if len(errs) == 0 {
		errs = append(errs, field.Invalid(path, field.OmitValueType{}, "must be YAML or JSON: "+strictErr.Error()))
	}
	return data, errs
}

var (
	jsonUnmarshalerType = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// decoder walks JSON and a Go value side by side, splitting objects and lists itself so that
// every error gets the exact path of the value at fault, list indexes included, and so that one
// error does not hide the next. Values it does not split (scalars, and types with their own
// UnmarshalJSON such as resource.Quantity) go to sigs.k8s.io/json.UnmarshalStrict, the decoder
// that the API server uses.
type decoder struct {
	errs field.ErrorList
}

func (d *decoder) decode(data []byte, v reflect.Value, p *field.Path) {
	isNull := bytes.Equal(data, []byte("null"))
	if isLeaf(v.Type()) {
		d.leaf(data, v, p)
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		if isNull {
			v.SetZero()
			return
		}
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		d.decode(data, v.Elem(), p)
	case reflect.Slice:
		if isNull {
			v.SetZero()
			return
		}
		items, ok := d.splitArray(data, p)
		if !ok {
			return
		}
		s := reflect.MakeSlice(v.Type(), len(items), len(items))
		for i, item := range items {
			d.decode(item, s.Index(i), p.Index(i))
		}
		v.Set(s)
	case reflect.Map:
		if isNull {
			v.SetZero()
			return
		}
		members, ok := d.splitObject(data, p, (*field.Path).Key)
		if !ok {
			return
		}
		m := reflect.MakeMapWithSize(v.Type(), len(members))
		for _, mem := range members {
			elem := reflect.New(v.Type().Elem()).Elem()
			d.decode(mem.value, elem, p.Key(mem.key))
			m.SetMapIndex(reflect.ValueOf(mem.key).Convert(v.Type().Key()), elem)
		}
		v.Set(m)
	case reflect.Struct:
		if isNull {
			return // as encoding/json: null leaves a struct as it is
		}
		members, ok := d.splitObject(data, p, func(p *field.Path, key string) *field.Path { return p.Child(key) })
		if !ok {
			return
		}
		fields := structFields(v.Type())
		for _, mem := range members {
			index, known := fields.byName[mem.key]
			if !known {
				d.errs = append(d.errs, field.NotSupported(p.Child(mem.key), mem.key, fields.names))
				continue
			}
			d.decode(mem.value, fieldByIndexAlloc(v, index), p.Child(mem.key))
		}
	default:
		d.leaf(data, v, p)
	}
}

// isLeaf tells whether a type is decoded whole by sigs.k8s.io/json rather than split.
func isLeaf(t reflect.Type) bool {
	if t.Implements(jsonUnmarshalerType) || reflect.PointerTo(t).Implements(jsonUnmarshalerType) ||
		t.Implements(textUnmarshalerType) || reflect.PointerTo(t).Implements(textUnmarshalerType) {
		return true
	}
	switch t.Kind() {
	case reflect.Pointer:
		return false
	case reflect.Slice:
		return t.Elem().Kind() == reflect.Uint8 // []byte is a base64 string
	case reflect.Map:
		return t.Key().Kind() != reflect.String
	case reflect.Struct:
		return structFields(t).opaque
	default:
		return true
	}
}

// leaf decodes a value whole.
func (d *decoder) leaf(data []byte, v reflect.Value, p *field.Path) {
	strictErrs, err := sigsjson.UnmarshalStrict(data, v.Addr().Interface())
	for _, se := range strictErrs {
		fp := p
		if fe, ok := se.(sigsjson.FieldError); ok {
			fp = appendJSONPath(p, fe.FieldPath())
		}
		if strings.HasPrefix(se.Error(), "duplicate field") {
			d.errs = append(d.errs, field.Duplicate(fp, field.OmitValueType{}))
		} else {
			d.errs = append(d.errs, field.Invalid(fp, field.OmitValueType{}, se.Error()))
		}
	}
	if err == nil {
		return
	}
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &typeErr) {
		d.errs = append(d.errs, typeError(data, v.Type(), p))
		return
	}
	d.errs = append(d.errs, field.Invalid(p, badValue(data), err.Error()))
}

type member struct {
	key   string
	value json.RawMessage
}

// splitObject returns the members of a JSON object in order, reporting repeated keys.
func (d *decoder) splitObject(data []byte, p *field.Path, child func(*field.Path, string) *field.Path) ([]member, bool) {
	if len(data) == 0 || data[0] != '{' {
		d.errs = append(d.errs, typeError(data, reflect.TypeFor[map[string]any](), p))
		return nil, false
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if _, err := dec.Token(); err != nil {
		d.errs = append(d.errs, field.InternalError(p, err))
		return nil, false
	}
	var members []member
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			d.errs = append(d.errs, field.InternalError(p, err))
			return nil, false
		}
		key, _ := tok.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			d.errs = append(d.errs, field.InternalError(p, err))
			return nil, false
		}
		if seen[key] {
			d.errs = append(d.errs, field.Duplicate(child(p, key), key))
		}
		seen[key] = true
		members = append(members, member{key: key, value: raw})
	}
	return members, true
}

// splitArray returns the items of a JSON array.
func (d *decoder) splitArray(data []byte, p *field.Path) ([]json.RawMessage, bool) {
	if len(data) == 0 || data[0] != '[' {
		d.errs = append(d.errs, typeError(data, reflect.TypeFor[[]any](), p))
		return nil, false
	}
	var items []json.RawMessage
	if err := json.Unmarshal(data, &items); err != nil {
		d.errs = append(d.errs, field.InternalError(p, err))
		return nil, false
	}
	return items, true
}

// typeError reports a JSON value that does not fit Go type t.
func typeError(data []byte, t reflect.Type, p *field.Path) *field.Error {
	return field.TypeInvalid(p, badValue(data), "must be "+describeType(t))
}

// badValue is the value to show in an error: a scalar as it is, an object or a list not at all.
func badValue(data []byte) any {
	var v any
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(data, &v); err != nil {
		return field.OmitValueType{}
	}
	switch v.(type) {
	case string, bool, int64, float64:
		return v
	default:
		return field.OmitValueType{}
	}
}

// describeType names the JSON shape of a Go type, for error details.
func describeType(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t.PkgPath() == "k8s.io/apimachinery/pkg/api/resource" && t.Name() == "Quantity":
		return "a quantity (a string such as \"10Gi\", or a number)"
	case t.PkgPath() == "k8s.io/apimachinery/pkg/util/intstr" && t.Name() == "IntOrString":
		return "an integer or a string"
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return "a base64 string"
		}
		return "a list"
	case reflect.Map, reflect.Struct:
		return "an object"
	default:
		return "a value of type " + t.String()
	}
}

// appendJSONPath appends a path as sigs.k8s.io/json writes it ("a.b[0].c") to p.
func appendJSONPath(p *field.Path, s string) *field.Path {
	for s != "" {
		switch s[0] {
		case '.':
			s = s[1:]
		case '[':
			end := strings.IndexByte(s, ']')
			if end < 0 {
				return p.Child(s)
			}
			var i int
			if _, err := fmt.Sscanf(s[1:end], "%d", &i); err == nil {
				p = p.Index(i)
			} else {
				p = p.Key(s[1:end])
			}
			s = s[end+1:]
		default:
			end := strings.IndexAny(s, ".[")
			if end < 0 {
				end = len(s)
			}
			p = p.Child(s[:end])
			s = s[end:]
		}
	}
	return p
}
