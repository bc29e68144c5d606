package addon

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	eventsv1client "k8s.io/client-go/kubernetes/typed/events/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
)

// MaxEventNote is the longest note the API server accepts on an events.k8s.io/v1 Event.
const MaxEventNote = 1024

// EventRecorder is the manager's events.k8s.io recorder for the controller name, with notes cut
// to MaxEventNote: the API server refuses a longer one, and the event would be lost. Under Run,
// the manager's recorder writes through a client of its own (--event-qps, --event-burst).
func EventRecorder(mgr ctrl.Manager, name string) events.EventRecorder {
	return noteLimit{mgr.GetEventRecorder(name)}
}

type annotated struct {
	events.EventRecorder
	events.AnnotatedEventRecorder
}

// startEvents starts a broadcaster that writes Events through httpClient (the manager's
// connections), with cfg's identity, at qps and burst, until ctx is done; stop it with
// Shutdown. Events are best effort: those waiting for the rate limit die with the process.
func startEvents(ctx context.Context, cfg *rest.Config, httpClient *http.Client, qps float32, burst int) (events.EventBroadcaster, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = qps, burst
	// Events are a built-in kind: protobuf costs the API server and us less than JSON, as for
	// kube-controller-manager's.
	cfg.ContentType = runtime.ContentTypeProtobuf
	cl, err := eventsv1client.NewForConfigAndClient(cfg, httpClient)
	if err != nil {
		return nil, fmt.Errorf("creating the events client: %w", err)
	}
	b := events.NewBroadcaster(&events.EventSinkImpl{Interface: cl})
	if err := b.StartRecordingToSinkWithContext(ctx); err != nil {
		return nil, fmt.Errorf("starting the event broadcaster: %w", err)
	}
	return b, nil
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
