package addon

import (
	"context"
	"sync"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// EventsYield is how long an Event waits, at most, for the process's reconciles to be done
// before it is written (then at --event-qps). An Event is a write to the API server like the
// objects a reconcile makes, and costs it about as much; while a burst of objects is being made,
// the Events about them wait for the burst to end rather than slow it. make bench ADDON=podgroups,
// Volcano, 500 PodGroups: with every Event written at once, the API server's time per create
// rose from 12 to 19 ms and the add-on's rate fell from 0.84 to 0.56 of the bare loop's.
const EventsYield = 2 * time.Second

// reconciling counts the reconciles in flight in the process, of every controller Busy wraps.
var reconciling = newInFlight()

// Busy is r counted among the process's reconciles in flight, for which Events wait
// (EventsYield). Give it to the builder's Complete.
func Busy(r reconcile.Reconciler) reconcile.Reconciler {
	return reconcile.Func(func(ctx context.Context, q reconcile.Request) (reconcile.Result, error) {
		reconciling.begin()
		defer reconciling.end()
		return r.Reconcile(ctx, q)
	})
}

// inFlight counts work in flight, and tells when there is none.
type inFlight struct {
	mu sync.Mutex
	n  int
	// idle is closed while n is 0.
	idle chan struct{}
}

func newInFlight() *inFlight {
	idle := make(chan struct{})
	close(idle)
	return &inFlight{idle: idle}
}

func (f *inFlight) begin() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.n == 0 {
		f.idle = make(chan struct{})
	}
	f.n++
}

func (f *inFlight) end() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n--
	if f.n == 0 {
		close(f.idle)
	}
}

// wait returns when nothing is in flight, after at most max, or when ctx ends.
func (f *inFlight) wait(ctx context.Context, max time.Duration) {
	f.mu.Lock()
	idle := f.idle
	f.mu.Unlock()
	select {
	case <-idle:
		return
	default:
	}
	t := time.NewTimer(max)
	defer t.Stop()
	select {
	case <-idle:
	case <-t.C:
	case <-ctx.Done():
	}
}
