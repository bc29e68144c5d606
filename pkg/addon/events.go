package addon

import (
	"context"
	"fmt"
	"hash/fnv"
	"net/http"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	eventsv1client "k8s.io/client-go/kubernetes/typed/events/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
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
// Shutdown. The client it writes through is returned too, and the sink, which counts the Events
// not written because ctx ended. Events are best effort: those waiting for the rate limit die
// with the process.
func startEvents(ctx context.Context, cfg *rest.Config, httpClient *http.Client, qps float32, burst int) (events.EventBroadcaster, eventsv1client.EventsV1Interface, *stoppingSink, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = qps, burst
	// Events are a built-in kind: protobuf costs the API server and us less than JSON, as for
	// kube-controller-manager's.
	cfg.ContentType = runtime.ContentTypeProtobuf
	cl, err := eventsv1client.NewForConfigAndClient(cfg, httpClient)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("creating the events client: %w", err)
	}
	sink := &stoppingSink{EventSink: &events.EventSinkImpl{Interface: cl}, busy: reconciling}
	b := events.NewBroadcaster(sink)
	if err := b.StartRecordingToSinkWithContext(ctx); err != nil {
		return nil, nil, nil, fmt.Errorf("starting the event broadcaster: %w", err)
	}
	return b, cl, sink, nil
}

// stoppingSink is the broadcaster's sink. A write that fails because its context ended (the
// process stops; most often while the Event waited for --event-qps) is counted and taken as done:
// client-go would otherwise log each one as an error, with its stack, and try it again, which
// after a burst of Events is thousands of lines at every stop. The count is logged once
// (Unwritten). Other failures go to client-go as they are: logged, and retried or dropped.
//
// Each write first waits, at most EventsYield, for the process's reconciles to be done (Busy).
type stoppingSink struct {
	events.EventSink
	unwritten atomic.Int64
	// busy is what writes wait for; nil: none.
	busy *inFlight
}

func (s *stoppingSink) Create(ctx context.Context, e *eventsv1.Event) (*eventsv1.Event, error) {
	return s.written(ctx, e, s.EventSink.Create)
}

func (s *stoppingSink) Update(ctx context.Context, e *eventsv1.Event) (*eventsv1.Event, error) {
	return s.written(ctx, e, s.EventSink.Update)
}

func (s *stoppingSink) Patch(ctx context.Context, e *eventsv1.Event, data []byte) (*eventsv1.Event, error) {
	return s.written(ctx, e, func(ctx context.Context, e *eventsv1.Event) (*eventsv1.Event, error) {
		return s.EventSink.Patch(ctx, e, data)
	})
}

func (s *stoppingSink) written(ctx context.Context, e *eventsv1.Event, write func(context.Context, *eventsv1.Event) (*eventsv1.Event, error)) (*eventsv1.Event, error) {
	if s.busy != nil {
		s.busy.wait(ctx, EventsYield)
	}
	out, err := write(ctx, e)
	if err != nil && ctx.Err() != nil {
		s.unwritten.Add(1)
		return e, nil
	}
	return out, err
}

// Unwritten is how many Events were not written because the process stopped.
func (s *stoppingSink) Unwritten() int64 { return s.unwritten.Load() }

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

// Tell emits an Event about the JobSet js (related may be nil) that is never folded into the
// series of another note. client-go's events.k8s.io recorder folds Events of the same type,
// action, reason, reporting controller and instance, regarding and related object into one
// series, which keeps the first note and counts the others: a note that changes (an error, a
// count, names) would show only its first text. Tell gives each note a series of its own: the
// regarding reference's fieldPath (part of the series key) names the note, "note#" and 8 hex
// digits of its hash, so that the same note told again is counted in its series and a new note
// is an Event of its own. Use it for every Event whose note varies; a note that never varies
// may go through rec.Eventf.
func Tell(rec events.EventRecorder, js *jobsetv1alpha2.JobSet, related runtime.Object, eventtype, reason, action, note string, args ...any) {
	note = CutNote(fmt.Sprintf(note, args...))
	rec.Eventf(regardingNote(js, note), related, eventtype, reason, action, "%s", note)
}

// regardingNote is the reference to js, as the recorder makes one, with the note's field path.
func regardingNote(js *jobsetv1alpha2.JobSet, note string) *corev1.ObjectReference {
	h := fnv.New32a()
	_, _ = h.Write([]byte(note))
	return &corev1.ObjectReference{
		APIVersion: jobsetv1alpha2.GroupVersion.String(), Kind: "JobSet",
		Namespace: js.Namespace, Name: js.Name, UID: js.UID, ResourceVersion: js.ResourceVersion,
		FieldPath: fmt.Sprintf("note#%08x", h.Sum32()),
	}
}

// Told remembers what a controller told about each object (by UID), so that what it meets on
// every reconcile is told once: First, the Warning told last (told again only after another),
// and Once, each thing told (a reused PVC, a held one), until Forget. The zero value is ready;
// it is safe for concurrent use.
type Told struct {
	mu   sync.Mutex
	last map[types.UID]string
	once map[types.UID]sets.Set[string]
	// gone are the UIDs the last Prune found not alive: the next one forgets them.
	gone sets.Set[types.UID]
}

// Warn emits, with Tell, a Warning about js whose reason was not the last told about it
// (First), and tells whether it did (the caller counts it).
func (t *Told) Warn(rec events.EventRecorder, js *jobsetv1alpha2.JobSet, related runtime.Object, reason, action, note string, args ...any) bool {
	if !t.First(js.UID, reason) {
		return false
	}
	Tell(rec, js, related, corev1.EventTypeWarning, reason, action, note, args...)
	return true
}

// Once records what as told about uid and tells whether it was not told before.
func (t *Told) Once(uid types.UID, what string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.once == nil {
		t.once = map[types.UID]sets.Set[string]{}
	}
	if t.once[uid].Has(what) {
		return false
	}
	if t.once[uid] == nil {
		t.once[uid] = sets.New[string]()
	}
	t.once[uid].Insert(what)
	return true
}

// Has tells whether what was recorded as told about uid (by Once).
func (t *Told) Has(uid types.UID, what string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.once[uid].Has(what)
}

// Unsay forgets that what was told about uid, so that Once tells it again.
func (t *Told) Unsay(uid types.UID, what string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.once[uid].Delete(what)
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
	delete(t.once, uid)
}

// Prune forgets what was told about each object that alive said was gone at this Prune and
// at the one before (an object deleted while the controller did not see it being deleted; the
// two calls leave an object created between a caller's list and its Prune alone), and returns
// how many it forgot.
func (t *Told) Prune(alive func(types.UID) bool) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	gone := sets.New[types.UID]()
	forgot := 0
	check := func(uid types.UID) {
		switch {
		case alive(uid) || gone.Has(uid):
		case t.gone.Has(uid):
			delete(t.last, uid)
			delete(t.once, uid)
			forgot++
		default:
			gone.Insert(uid)
		}
	}
	for uid := range t.last {
		check(uid)
	}
	for uid := range t.once {
		check(uid)
	}
	t.gone = gone
	return forgot
}

// Len is how many objects something was told about.
func (t *Told) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(sets.KeySet(t.last).Union(sets.KeySet(t.once)))
}
