package bench

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/jobset-addons/jobset-addons/e2e/testbed"
)

// workersStarted is when the add-on's process last started the workers of its controller: its
// caches synced and it leads. The testbed runs add-ons with --log-format console, whose lines
// begin with an RFC 3339 time in milliseconds; the bench runs on the same clock.
func workersStarted(tb testbed.Config, addon string) (time.Time, error) {
	f, err := os.Open(tb.ProcessLog(addon))
	if err != nil {
		return time.Time{}, err
	}
	defer f.Close()
	var last time.Time
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.Contains(line, "Starting workers") || !strings.Contains(line, `"controller": "`+addon+`"`) {
			continue
		}
		ts, _, _ := strings.Cut(line, "\t")
		if t, err := time.Parse(time.RFC3339Nano, ts); err == nil {
			last = t
		}
	}
	if err := sc.Err(); err != nil {
		return time.Time{}, err
	}
	if last.IsZero() {
		return last, fmt.Errorf("no %q line of controller %s in %s", "Starting workers", addon, tb.ProcessLog(addon))
	}
	return last, nil
}

// benchRounds is how many rounds of ours against the bare loop a scenario runs in one testbed:
// $BENCH_ROUNDS, 3 by default. Tables show the median, and each round's ratio.
func benchRounds() int {
	if n, err := strconv.Atoi(os.Getenv("BENCH_ROUNDS")); err == nil && n > 0 {
		return n
	}
	return 3
}

// median of d (the upper one of an even count).
func median(d []time.Duration) time.Duration { return quantile(d, 0.5) }

// roundRatios lists, per round, baseline / ours as "0.91 0.88 0.95".
func roundRatios(ours, baseline []time.Duration) string {
	var parts []string
	for i := range ours {
		parts = append(parts, fmt.Sprintf("%.2f", baseline[i].Seconds()/ours[i].Seconds()))
	}
	return strings.Join(parts, " ")
}

// restartBench is an add-on's creation rate against a bare loop's: n objects of one kind that
// the add-on makes for objects that exist already (JobSets, Jobs), in ns.
type restartBench struct {
	addon string
	ns    string
	// list is the kind made (its List kind), resource its apiserver resource name, ours the
	// labels of the add-on's objects.
	list     schema.GroupVersionKind
	resource string
	ours     client.MatchingLabels
	n        int
	// bare creates the i-th object as the add-on does (name, labels, owner, spec).
	bare func(i int) error
	// eventReason and events: the Events of creation the add-on writes in a round.
	eventReason string
	events      int
}

// restartResult holds, per round, the bare loop's time and the add-on's.
type restartResult struct {
	bare, working, restart, started, acting, first, events []time.Duration
	// apiserver time of the creates (POST), summed over the rounds.
	bareServer, oursServer histogram
}

// rows are the table rows of the result: the rate from the workers starting against the bare
// loop (the target), each round's ratio, then the cold start.
func (r restartResult) rows(what, target string, n int) []row {
	bare, working, restart := median(r.bare), median(r.working), median(r.restart)
	return []row{
		{
			what:     fmt.Sprintf("%s, from the controller's workers starting (median of %d)", what, len(r.working)),
			ours:     working.Round(time.Millisecond).String(),
			baseline: bare.Round(time.Millisecond).String() + " bare",
			ratio:    fmt.Sprintf("%.2f", bare.Seconds()/working.Seconds()),
			target:   target,
		},
		{what: "  each round, bare / ours", ours: roundRatios(r.working, r.bare), target: "-"},
		{
			what:     fmt.Sprintf("%s, from the process starting (cold start)", what),
			ours:     restart.Round(time.Millisecond).String(),
			baseline: bare.Round(time.Millisecond).String() + " bare",
			ratio:    fmt.Sprintf("%.2f", bare.Seconds()/restart.Seconds()),
			target:   "-",
		},
		{what: "  of which the process started and answered readyz", ours: median(r.started).Round(time.Millisecond).String(), target: "-"},
		{what: "  the workers started (caches synced, Lease taken)", ours: median(r.acting).Round(time.Millisecond).String(), target: "-"},
		{what: "  the first object made", ours: median(r.first).Round(time.Millisecond).String(), target: "-"},
		{what: fmt.Sprintf("  its %d creation Events written (--event-qps)", n), ours: median(r.events).Round(time.Millisecond).String(), target: "-"},
		{what: "  apiserver time of a create, p50/p99", ours: fmtSeconds(r.oursServer.quantile(0.5)) + " / " + fmtSeconds(r.oursServer.quantile(0.99)),
			baseline: fmtSeconds(r.bareServer.quantile(0.5)) + " / " + fmtSeconds(r.bareServer.quantile(0.99)), target: "-"},
		{what: "  creates (POST) the apiserver took, all rounds", ours: fmt.Sprintf("%.0f", r.oursServer.count), baseline: fmt.Sprintf("%.0f", r.bareServer.count), target: "-"},
	}
}

// run measures, in benchRounds() rounds on one testbed: the add-on is stopped and its objects
// deleted; the bare loop creates them (16 at once, with the add-on's QPS and burst, given by
// bareCfg) and they are deleted again; the add-on is started and makes them again. The add-on
// is timed from the moment it acts (its workers start on synced caches, with the Lease) until
// all n exist, the bare loop from its start: the same work. The cold start (process start,
// listing what it caches, taking the Lease) is a cost per start, not per object, and has rows
// of its own. A round starts once the last one's Events are written.
func (rb restartBench) run(ctx context.Context, b *testing.B, c client.Client, tb testbed.Config, cs kubernetes.Interface) restartResult {
	serverSide := func() histogram {
		raw, err := cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
		if err != nil {
			b.Fatal(err)
		}
		return parseHistogram(string(raw), "apiserver_request_duration_seconds", `resource="`+rb.resource+`",scope="resource",subresource="",verb="POST"`)
	}
	deleteAll := func() {
		obj := &metav1.PartialObjectMetadata{}
		obj.SetGroupVersionKind(rb.list.GroupVersion().WithKind(strings.TrimSuffix(rb.list.Kind, "List")))
		if err := c.DeleteAllOf(ctx, obj, client.InNamespace(rb.ns), rb.ours); err != nil {
			b.Fatal(err)
		}
		if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			return countObjects(ctx, c, rb.list, rb.ns, rb.ours) == 0, nil
		}); err != nil {
			b.Fatal(err)
		}
		time.Sleep(time.Second)
	}
	var r restartResult
	for range benchRounds() {
		if err := testbed.StopAddon(ctx, tb, rb.addon); err != nil {
			b.Fatal(err)
		}
		deleteAll()
		before := serverSide()
		start := time.Now()
		if err := createParallel(rb.n, 16, rb.bare); err != nil {
			b.Fatal(err)
		}
		r.bare = append(r.bare, timeUntil(ctx, b, c, start, rb.list, rb.ns, rb.ours, rb.n))
		r.bareServer = r.bareServer.plus(serverSide().minus(before))
		deleteAll()

		// The clock starts as the process is started: the harness's own preparation
		// (certificate, chart render, ServiceAccount token) is done before.
		addon, err := testbed.PrepareAddon(ctx, tb, rb.addon, addonArgs()...)
		if err != nil {
			b.Fatal(err)
		}
		before = serverSide()
		start = time.Now()
		if err := addon.Start(ctx, nil); err != nil {
			b.Fatal(err)
		}
		r.started = append(r.started, time.Since(start))
		r.first = append(r.first, timeUntil(ctx, b, c, start, rb.list, rb.ns, rb.ours, 1))
		restart := timeUntil(ctx, b, c, start, rb.list, rb.ns, rb.ours, rb.n)
		r.oursServer = r.oursServer.plus(serverSide().minus(before))
		acting, err := workersStarted(tb, rb.addon)
		if err != nil {
			b.Fatal(err)
		}
		r.restart = append(r.restart, restart)
		r.acting = append(r.acting, acting.Sub(start))
		r.working = append(r.working, restart-acting.Sub(start))
		r.events = append(r.events, eventsUntil(ctx, b, c, start, rb.ns, rb.eventReason, rb.events))
	}
	return r
}

// eventsUntil polls until n events.k8s.io Events of reason in ns were observed at or after start,
// and returns the time from start.
func eventsUntil(ctx context.Context, b *testing.B, c client.Client, start time.Time, ns, reason string, n int) time.Duration {
	count := func(ctx context.Context) int {
		var list eventsv1.EventList
		if err := c.List(ctx, &list, client.InNamespace(ns)); err != nil {
			return -1
		}
		got := 0
		for _, e := range list.Items {
			if e.Reason == reason && !e.EventTime.Time.Before(start.Truncate(time.Microsecond)) {
				got++
			}
		}
		return got
	}
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
		return count(ctx) >= n, nil
	}); err != nil {
		b.Fatalf("waiting for %d %s Events in %s: %v (have %d)", n, reason, ns, err, count(ctx))
	}
	return time.Since(start)
}
