package addon

import (
	"fmt"
	"sync"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
)

// MaxEventNote is the longest note the API server accepts on an events.k8s.io/v1 Event.
const MaxEventNote = 1024

// EventRecorder is the manager's events.k8s.io recorder for the controller name, with notes cut
// to MaxEventNote: the API server refuses a longer one, and the event would be lost.
func EventRecorder(mgr ctrl.Manager, name string) events.EventRecorder {
	return noteLimit{mgr.GetEventRecorder(name)}
}

type noteLimit struct{ events.EventRecorder }

func (r noteLimit) Eventf(regarding, related runtime.Object, eventtype, reason, action, note string, args ...any) {
	r.EventRecorder.Eventf(regarding, related, eventtype, reason, action, "%s", CutNote(fmt.Sprintf(note, args...)))
}

// CutNote cuts note to MaxEventNote bytes, on a character boundary, ending it with "...".
func CutNote(note string) string {
	if len(note) <= MaxEventNote {
		return note
	}
	cut := MaxEventNote - len("...")
	for cut > 0 && !utf8.RuneStart(note[cut]) {
		cut--
	}
	return note[:cut] + "..."
}

// Told remembers which Warning was told last per object, so that a reconciler that meets the
// same problem on every reconcile tells it once (and again only after telling another). The
// zero value is ready; it is safe for concurrent use.
type Told struct {
	mu   sync.Mutex
	last map[types.UID]string
}

// First records reason as the last told about uid and tells whether it is new, that is,
// whether the caller should emit it.
func (t *Told) First(uid types.UID, reason string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.last == nil {
		t.last = map[types.UID]string{}
	}
	if t.last[uid] == reason {
		return false
	}
	t.last[uid] = reason
	return true
}

// Forget drops what was told about uid (the object is gone).
func (t *Told) Forget(uid types.UID) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.last, uid)
}
