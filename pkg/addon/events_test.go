package addon

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/jobset-addons/jobset-addons/pkg/addon/addontest"
)

func TestCutNote(t *testing.T) {
	if got := CutNote("short"); got != "short" {
		t.Errorf("CutNote(short) = %q", got)
	}
	for _, note := range []string{strings.Repeat("a", 5000), strings.Repeat("é", 800), strings.Repeat("a", MaxEventNote)} {
		got := CutNote(note)
		if len(got) > MaxEventNote || !utf8.ValidString(got) {
			t.Errorf("CutNote of %d bytes gave %d bytes, valid UTF-8 %v", len(note), len(got), utf8.ValidString(got))
		}
		if len(note) > MaxEventNote && !strings.HasSuffix(got, "...") {
			t.Errorf("a cut note does not end with ...")
		}
	}
}

// recorded is an events.EventRecorder that keeps what it is given.
type recorded struct{ events []recordedEvent }

type recordedEvent struct {
	regarding, related              runtime.Object
	eventtype, reason, action, note string
}

func (r *recorded) Eventf(regarding, related runtime.Object, eventtype, reason, action, note string, args ...any) {
	r.events = append(r.events, recordedEvent{regarding, related, eventtype, reason, action, fmt.Sprintf(note, args...)})
}

func TestTellKeysEachNote(t *testing.T) {
	js := addontest.JobSet("ns", "js").UID("uid-js").Obj()
	js.ResourceVersion = "7"
	var rec recorded
	for _, n := range []int{1, 2, 1} {
		Tell(&rec, js, nil, corev1.EventTypeWarning, "Failed", "Create", "%d failed", n)
	}
	paths := make([]string, len(rec.events))
	for i, e := range rec.events {
		ref, ok := e.regarding.(*corev1.ObjectReference)
		if !ok {
			t.Fatalf("regarding is a %T, want an ObjectReference", e.regarding)
		}
		want := corev1.ObjectReference{APIVersion: "jobset.x-k8s.io/v1alpha2", Kind: "JobSet", Namespace: "ns", Name: "js", UID: "uid-js", ResourceVersion: "7", FieldPath: ref.FieldPath}
		if diff := cmp.Diff(want, *ref); diff != "" {
			t.Errorf("regarding (-want +got):\n%s", diff)
		}
		paths[i] = ref.FieldPath
	}
	if paths[0] == paths[1] || paths[0] != paths[2] || !strings.HasPrefix(paths[0], "note#") {
		t.Errorf("field paths %q: want one per note, the same for the same note", paths)
	}
	if rec.events[1].note != "2 failed" || rec.events[1].related != nil {
		t.Errorf("second Event %+v, want note \"2 failed\" and no related object", rec.events[1])
	}
}

func TestToldOnceAndWarn(t *testing.T) {
	var told Told
	if !told.Once("a", "pvc-1") || told.Once("a", "pvc-1") || !told.Once("a", "pvc-2") || !told.Once("b", "pvc-1") {
		t.Fatal("Once must tell each thing once per object")
	}
	if !told.Has("a", "pvc-1") || told.Has("a", "pvc-3") {
		t.Fatal("Has does not say what Once told")
	}
	told.Unsay("a", "pvc-1")
	if told.Has("a", "pvc-1") || !told.Once("a", "pvc-1") {
		t.Fatal("Unsay did not let pvc-1 be told again")
	}
	js := addontest.JobSet("ns", "js").UID("a").Obj()
	var rec recorded
	got := []bool{
		told.Warn(&rec, js, nil, "Invalid", "Skip", "bad %d", 1),
		told.Warn(&rec, js, nil, "Invalid", "Skip", "bad %d", 2),
		told.Warn(&rec, js, nil, "NotAdmitted", "Skip", "not admitted"),
		told.Warn(&rec, js, nil, "Invalid", "Skip", "bad %d", 3),
	}
	if diff := cmp.Diff([]bool{true, false, true, true}, got); diff != "" {
		t.Errorf("Warn told (-want +got):\n%s", diff)
	}
	if len(rec.events) != 3 || rec.events[2].note != "bad 3" || rec.events[2].eventtype != corev1.EventTypeWarning {
		t.Errorf("Events %+v: want 3, the last a Warning \"bad 3\"", rec.events)
	}
	told.Forget("a")
	if told.Has("a", "pvc-2") || !told.Warn(&rec, js, nil, "Invalid", "Skip", "bad") {
		t.Error("Forget left what was told")
	}
}

// failingSink fails every write with err, or with its context's error once that ended.
type failingSink struct{ err error }

func (f failingSink) fail(ctx context.Context) (*eventsv1.Event, error) {
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	return nil, f.err
}

func (f failingSink) Create(ctx context.Context, _ *eventsv1.Event) (*eventsv1.Event, error) {
	return f.fail(ctx)
}

func (f failingSink) Update(ctx context.Context, _ *eventsv1.Event) (*eventsv1.Event, error) {
	return f.fail(ctx)
}

func (f failingSink) Patch(ctx context.Context, _ *eventsv1.Event, _ []byte) (*eventsv1.Event, error) {
	return f.fail(ctx)
}

func TestStoppingSink(t *testing.T) {
	refused := errors.New("refused")
	s := &stoppingSink{EventSink: failingSink{err: refused}}
	e := &eventsv1.Event{}
	writes := map[string]func(context.Context) (*eventsv1.Event, error){
		"create": func(ctx context.Context) (*eventsv1.Event, error) { return s.Create(ctx, e) },
		"update": func(ctx context.Context) (*eventsv1.Event, error) { return s.Update(ctx, e) },
		"patch":  func(ctx context.Context) (*eventsv1.Event, error) { return s.Patch(ctx, e, []byte("{}")) },
	}
	for name, write := range writes {
		// While the process runs, a failure is client-go's to log and retry.
		if _, err := write(context.Background()); !errors.Is(err, refused) {
			t.Errorf("%s while running: %v, want %v", name, err, refused)
		}
	}
	if got := s.Unwritten(); got != 0 {
		t.Errorf("Unwritten while running = %d, want 0", got)
	}
	stopped, cancel := context.WithCancel(context.Background())
	cancel()
	for name, write := range writes {
		// Once it stops, the write is counted and taken as done: not logged, not retried.
		got, err := write(stopped)
		if err != nil || got != e {
			t.Errorf("%s once stopped: %v, %v; want the event, no error", name, got, err)
		}
	}
	if got := s.Unwritten(); got != 3 {
		t.Errorf("Unwritten once stopped = %d, want 3", got)
	}
}
