package contract

import (
	"reflect"
	"slices"
	"strings"
	"sync"
)

// jsonFields is what the decoder needs to know of a struct type.
type jsonFields struct {
	byName map[string][]int // JSON name to field index (through embedded structs)
	names  []string         // the JSON names, sorted, for "supported values"
	opaque bool             // uses a json tag option the decoder does not handle: decode whole
}

var fieldCache sync.Map // reflect.Type -> *jsonFields

// structFields lists the JSON fields of a struct type as encoding/json sees them: tagged or
// exported fields, with the fields of untagged embedded structs promoted, the shallowest
// winning and same-depth ambiguities dropped.
func structFields(t reflect.Type) *jsonFields {
	if f, ok := fieldCache.Load(t); ok {
		return f.(*jsonFields)
	}
	type candidate struct {
		index  []int
		tagged bool
	}
	found := map[string][]candidate{} // name -> candidates at the shallowest depth seen
	depth := map[string]int{}
	opaque := false
	var walk func(t reflect.Type, index []int)
	walk = func(t reflect.Type, index []int) {
		for i := range t.NumField() {
			sf := t.Field(i)
			tag := sf.Tag.Get("json")
			if tag == "-" {
				continue
			}
			name, opts, _ := strings.Cut(tag, ",")
			if strings.Contains(opts, "string") {
				opaque = true
			}
			idx := append(slices.Clone(index), i)
			ft := sf.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if sf.Anonymous && name == "" && ft.Kind() == reflect.Struct {
				if !sf.IsExported() && sf.Type.Kind() == reflect.Pointer {
					continue // encoding/json cannot set it either
				}
				walk(ft, idx)
				continue
			}
			if !sf.IsExported() {
				continue
			}
			tagged := name != ""
			if !tagged {
				name = sf.Name
			}
			dp, seen := depth[name]
			switch {
			case !seen || len(idx) < dp:
				depth[name] = len(idx)
				found[name] = []candidate{{idx, tagged}}
			case len(idx) == dp:
				found[name] = append(found[name], candidate{idx, tagged})
			}
		}
	}
	walk(t, nil)
	f := &jsonFields{byName: map[string][]int{}, opaque: opaque}
	for name, cs := range found {
		var winners []candidate
		for _, c := range cs {
			if c.tagged {
				winners = append(winners, c)
			}
		}
		if len(winners) == 0 {
			winners = cs
		}
		if len(winners) == 1 {
			f.byName[name] = winners[0].index
			f.names = append(f.names, name)
		}
	}
	slices.Sort(f.names)
	fieldCache.Store(t, f)
	return f
}

// fieldByIndexAlloc is reflect.Value.FieldByIndex, allocating nil embedded pointers on the way.
func fieldByIndexAlloc(v reflect.Value, index []int) reflect.Value {
	for i, x := range index {
		if i > 0 && v.Kind() == reflect.Pointer {
			if v.IsNil() {
				v.Set(reflect.New(v.Type().Elem()))
			}
			v = v.Elem()
		}
		v = v.Field(x)
	}
	return v
}
