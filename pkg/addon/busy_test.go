package addon

import (
	"context"
	"errors"
	"testing"
	"time"

	eventsv1 "k8s.io/api/events/v1"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// recordingSink records when each Event was written.
type recordingSink struct {
	failingSink
	at chan time.Time
}

func (s recordingSink) Create(context.Context, *eventsv1.Event) (*eventsv1.Event, error) {
	s.at <- time.Now()
	return &eventsv1.Event{}, nil
}

func TestEventsWaitForReconciles(t *testing.T) {
	busy := newInFlight()
	s := &stoppingSink{EventSink: recordingSink{at: make(chan time.Time, 1)}, busy: busy}
	write := func() { _, _ = s.Create(context.Background(), &eventsv1.Event{}) }

	// Nothing in flight: written at once.
	start := time.Now()
	write()
	if d := (<-s.EventSink.(recordingSink).at).Sub(start); d > time.Second {
		t.Fatalf("an Event with no reconcile in flight waited %v", d)
	}

	// A reconcile in flight: the Event waits for its end.
	busy.begin()
	busy.begin()
	go write()
	select {
	case <-s.EventSink.(recordingSink).at:
		t.Fatal("an Event was written while reconciles were in flight")
	case <-time.After(200 * time.Millisecond):
	}
	busy.end()
	select {
	case <-s.EventSink.(recordingSink).at:
		t.Fatal("an Event was written while a reconcile was still in flight")
	case <-time.After(100 * time.Millisecond):
	}
	ended := time.Now()
	busy.end()
	select {
	case at := <-s.EventSink.(recordingSink).at:
		if at.Before(ended) {
			t.Errorf("the Event was written before the last reconcile ended")
		}
	case <-time.After(EventsYield):
		t.Fatal("the Event was not written once no reconcile was in flight")
	}
}

func TestEventsWaitAtMostEventsYield(t *testing.T) {
	busy := newInFlight()
	busy.begin() // never ends
	done := make(chan struct{})
	start := time.Now()
	go func() {
		busy.wait(context.Background(), 50*time.Millisecond)
		close(done)
	}()
	select {
	case <-done:
		if d := time.Since(start); d < 50*time.Millisecond {
			t.Errorf("waited %v, want the whole 50ms while busy", d)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("wait did not return after its limit")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	start = time.Now()
	busy.wait(ctx, time.Hour)
	if d := time.Since(start); d > time.Second {
		t.Errorf("wait went on %v after its context ended", d)
	}
}

func TestBusyCountsReconciles(t *testing.T) {
	inner := make(chan struct{})
	entered := make(chan struct{})
	failed := errors.New("failed")
	r := Busy(reconcile.Func(func(context.Context, reconcile.Request) (reconcile.Result, error) {
		close(entered)
		<-inner
		return reconcile.Result{}, failed
	}))
	errc := make(chan error, 1)
	go func() {
		_, err := r.Reconcile(context.Background(), reconcile.Request{})
		errc <- err
	}()
	<-entered
	reconciling.mu.Lock()
	n := reconciling.n
	reconciling.mu.Unlock()
	if n != 1 {
		t.Errorf("reconciles in flight during one: %d, want 1", n)
	}
	close(inner)
	if err := <-errc; !errors.Is(err, failed) {
		t.Errorf("Busy's reconcile returned %v, want the inner one's error", err)
	}
	reconciling.mu.Lock()
	n = reconciling.n
	reconciling.mu.Unlock()
	if n != 0 {
		t.Errorf("reconciles in flight after it: %d, want 0", n)
	}
}
