package addon

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
)

// Cause is the part of a refusal that does not name the object: its causes' fields and
// messages, or its message, for Refusals. Objects made from one template are refused for
// one cause.
func Cause(err error) string {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return err.Error()
	}
	st := status.Status()
	if st.Details == nil || len(st.Details.Causes) == 0 {
		msg := st.Message
		if st.Details != nil && st.Details.Name != "" {
			msg = strings.ReplaceAll(msg, st.Details.Name, "NAME")
		}
		return msg
	}
	parts := make([]string, len(st.Details.Causes))
	for i, c := range st.Details.Causes {
		parts[i] = c.Field + ": " + c.Message
		if st.Details.Name != "" {
			parts[i] = strings.ReplaceAll(parts[i], st.Details.Name, "NAME")
		}
	}
	return strings.Join(parts, "; ")
}

// Refusals collects, in one reconcile, the objects whose creation the API server refused for
// good (Refused: a template it does not accept, for example after an upgrade), by template and
// cause. The zero value is ready; it is safe for concurrent use.
type Refusals struct {
	mu     sync.Mutex
	causes map[string]*refusal // template and cause
	order  []string
}

type refusal struct {
	template string
	names    []string
	err      error
	errName  string // the object err is about
}

// Add records that the object name, made from template, was refused with err.
func (r *Refusals) Add(template, name string, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	key := template + "\x00" + Cause(err)
	if r.causes == nil {
		r.causes = map[string]*refusal{}
	}
	if r.causes[key] == nil {
		r.causes[key] = &refusal{template: template, err: err, errName: name}
		r.order = append(r.order, key)
	}
	r.causes[key].names = append(r.causes[key].names, name)
}

// Tell calls tell once per template and cause that told has not recorded (Told.Once) for the
// JobSet uid — the caller emits its Warning there — and returns the
// refusals as one error, so that the reconcile is retried with the controller's back-off: the
// cause may go (a ValidatingAdmissionPolicy removed, a feature gate turned on) without anything
// the controller watches changing. kind names the objects in the error. The names given to
// tell are sorted, except that the first is the one the error names.
func (r *Refusals) Tell(told *Told, uid types.UID, kind string, tell func(template string, names []string, err error)) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.causes) == 0 {
		return nil
	}
	keys := slices.Sorted(slices.Values(r.order))
	msgs := make([]string, 0, len(keys))
	for _, k := range keys {
		f := r.causes[k]
		slices.Sort(f.names)
		if i := slices.Index(f.names, f.errName); i > 0 {
			f.names = append(append([]string{f.errName}, f.names[:i]...), f.names[i+1:]...)
		}
		msgs = append(msgs, fmt.Sprintf("template %s: %v", f.template, f.err))
		if told.Once(uid, "refused\x00"+k) {
			tell(f.template, f.names, f.err)
		}
	}
	return fmt.Errorf("the API server refuses %s: %s", kind, strings.Join(msgs, "; "))
}
