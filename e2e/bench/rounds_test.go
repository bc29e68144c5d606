package bench

import (
	"bufio"
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
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
// $BENCH_ROUNDS, 7 by default: single rounds on the 2-CPU testbed vary by a third. Tables show
// the median, and each round's ratio.
func benchRounds() int {
	if n, err := strconv.Atoi(os.Getenv("BENCH_ROUNDS")); err == nil && n > 0 {
		return n
	}
	return 7
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
	// also are the List kinds of other objects made with each one (the kubernetes backend's
	// Workload beside its PodGroup), deleted with it between the windows.
	also []schema.GroupVersionKind
	n    int
	// qps and burst are the add-on's client limits, which the bare loop gets too.
	qps   float32
	burst int
	// bare, given the add-on's own identity (its ServiceAccount's token, so that the apiserver
	// authenticates, authorizes, admits and audits both alike) with the add-on's QPS and burst,
	// is what creates the i-th object as the add-on does (name, labels, owner, spec).
	bare func(rc *rest.Config) func(i int) error
	// eventReason and events: the Events of creation the add-on writes in a round.
	eventReason string
	events      int
	// rounds is how many; 0 is benchRounds().
	rounds int
	// watches are the kinds made as the add-on's cache watches them (their metadata, by its
	// labels, in every namespace). When set, each round also times the bare loop while such
	// watches run: the API server's cost of a controller's watches of what it makes.
	watches []schema.GroupVersionResource
}

// bareWatched: the rounds of a restartBench with watches also time the bare loop with them
// (bench-smoke does not: a third window each round).
var bareWatched = true

// waitForEvents: the last round of a restartBench waits for the add-on's Events (bench-smoke
// does not: a rate limit's time, 15 to 30 s a scenario).
var waitForEvents = true

// beforeRounds, when set, is called once before a restartBench's first round, after its
// scenario made what the add-on works on: bench-smoke waits there for the namespaces of the
// parts before it to be gone, so that the add-on lists and reconciles its own objects only (its
// cold starts, its rounds), while the scenario's own setup (for podgroups some 20 s of the JobSet
// controller's work) overlaps their deletion.
var beforeRounds func()

// restartResult holds, per round, the bare loop's time and the add-on's.
type restartResult struct {
	bare, working, restart, started, acting, first, events []time.Duration
	// watched is the bare loop's time with the add-on's watches (restartBench.watches).
	watched []time.Duration
	// The apiserver's account of each window, summed over the rounds.
	bareServer, oursServer apiserverStats
	// CPU time each process used in the timed windows, summed over the rounds.
	bareCPU, oursCPU map[string]time.Duration
}

// apiserverStats is the apiserver's own account of a window, read off its /metrics.
type apiserverStats struct {
	// creates is its time per create (POST) of the kind made.
	creates histogram
	// allocated is the heap it allocated, in bytes; collections the garbage collections it ran.
	allocated, collections float64
}

func readAPIServerStats(metrics, resource string) apiserverStats {
	s := apiserverStats{creates: parseHistogram(metrics, "apiserver_request_duration_seconds", `resource="`+resource+`",scope="resource",subresource="",verb="POST"`)}
	for _, line := range strings.Split(metrics, "\n") {
		name, value, _ := strings.Cut(line, " ")
		v, err := strconv.ParseFloat(value, 64)
		if err != nil {
			continue
		}
		switch name {
		case "go_memstats_alloc_bytes_total":
			s.allocated = v
		case "go_gc_duration_seconds_count":
			s.collections = v
		}
	}
	return s
}

func (s apiserverStats) plus(o apiserverStats) apiserverStats {
	return apiserverStats{s.creates.plus(o.creates), s.allocated + o.allocated, s.collections + o.collections}
}

func (s apiserverStats) minus(o apiserverStats) apiserverStats {
	return apiserverStats{s.creates.minus(o.creates), s.allocated - o.allocated, s.collections - o.collections}
}

// cpuProcesses are the processes whose CPU time the rounds count: the testbed's, the bench's
// own (the bare loop, and the watches of both) and the add-on's.
func cpuProcesses(addon string) []string {
	return []string{"kube-apiserver", "etcd", "kube-controller", "kube-scheduler", "jobset", "kwok-controller", "bench.test", addon}
}

func addCPU(sum map[string]time.Duration, round map[string]time.Duration) map[string]time.Duration {
	if sum == nil {
		sum = map[string]time.Duration{}
	}
	for k, v := range round {
		sum[k] += v
	}
	return sum
}

// rows are the table rows of the result: the rate from the workers starting against the bare
// loop (the target), each round's ratio, against the bare loop with the add-on's watches (when
// timed), then the cold start.
func (r restartResult) rows(what, target string, n int) []row {
	bare, working, restart := median(r.bare), median(r.working), median(r.restart)
	rows := []row{
		{
			what:     fmt.Sprintf("%s, from the controller's workers starting (median of %d)", what, len(r.working)),
			ours:     working.Round(time.Millisecond).String(),
			baseline: bare.Round(time.Millisecond).String() + " bare",
			ratio:    fmt.Sprintf("%.2f", bare.Seconds()/working.Seconds()),
			target:   target,
			key:      "rate", value: bare.Seconds() / working.Seconds(),
		},
		{what: "  each round, bare / ours", ours: roundRatios(r.working, r.bare), target: "-"},
	}
	if len(r.watched) > 0 {
		watched := median(r.watched)
		rows = append(rows, []row{
			{
				what:     "  against the bare loop with the add-on's watches of what it makes (metadata, its labels)",
				ours:     working.Round(time.Millisecond).String(),
				baseline: watched.Round(time.Millisecond).String() + " bare+watches",
				ratio:    fmt.Sprintf("%.2f", watched.Seconds()/working.Seconds()),
				target:   "-",
			},
			{what: "  each round, bare+watches / ours", ours: roundRatios(r.working, r.watched), target: "-"},
		}...)
	}
	rows = append(rows, []row{
		{
			what:     fmt.Sprintf("%s, from the process starting (cold start)", what),
			ours:     restart.Round(time.Millisecond).String(),
			baseline: bare.Round(time.Millisecond).String() + " bare",
			ratio:    fmt.Sprintf("%.2f", bare.Seconds()/restart.Seconds()),
			target:   "-",
			key:      "cold", value: bare.Seconds() / restart.Seconds(),
		},
		{what: "  each round, bare / ours", ours: roundRatios(r.restart, r.bare), target: "-"},
		{what: "  of which the process started and answered readyz", ours: median(r.started).Round(time.Millisecond).String(), target: "-"},
		{what: "  the workers started (caches synced, Lease taken)", ours: median(r.acting).Round(time.Millisecond).String(), target: "-"},
		{what: "  the first object made", ours: median(r.first).Round(time.Millisecond).String(), target: "-"},
		{what: fmt.Sprintf("  its %d creation Events written (--event-qps), last round", n), ours: median(r.events).Round(time.Millisecond).String(), target: "-"},
		{what: "  apiserver time of a create, p50/p99", ours: fmtSeconds(r.oursServer.creates.quantile(0.5)) + " / " + fmtSeconds(r.oursServer.creates.quantile(0.99)),
			baseline: fmtSeconds(r.bareServer.creates.quantile(0.5)) + " / " + fmtSeconds(r.bareServer.creates.quantile(0.99)), target: "-"},
		{what: "  apiserver time of a create, mean", ours: fmtSeconds(r.oursServer.creates.mean()), baseline: fmtSeconds(r.bareServer.creates.mean()), target: "-"},
		{what: "  creates (POST) the apiserver took, all rounds", ours: fmt.Sprintf("%.0f", r.oursServer.creates.count), baseline: fmt.Sprintf("%.0f", r.bareServer.creates.count), target: "-"},
		{what: "  heap the apiserver allocated per round (ours: from the process start)", ours: fmt.Sprintf("%.0f MB", r.oursServer.allocated/1e6/float64(len(r.working))),
			baseline: fmt.Sprintf("%.0f MB", r.bareServer.allocated/1e6/float64(len(r.bare))), target: "-"},
		{what: "  garbage collections the apiserver ran in them, all rounds", ours: fmt.Sprintf("%.0f", r.oursServer.collections), baseline: fmt.Sprintf("%.0f", r.bareServer.collections), target: "-"},
	}...)
	for _, p := range slices.Sorted(maps.Keys(r.oursCPU)) {
		rows = append(rows, row{
			what:     fmt.Sprintf("  CPU used by %s in the timed windows, per round", p),
			ours:     (r.oursCPU[p] / time.Duration(len(r.working))).Round(time.Millisecond).String(),
			baseline: (r.bareCPU[p] / time.Duration(len(r.bare))).Round(time.Millisecond).String(),
			target:   "-",
		})
	}
	return rows
}

// run measures, in benchRounds() rounds on one testbed: the add-on is stopped and its objects
// deleted; the bare loop creates them (16 at once, as the add-on's ServiceAccount, with its QPS
// and burst) and they are deleted again; the add-on is started and makes them again. The add-on
// is timed from the moment it acts (its workers start on synced caches, with the Lease) until
// all n exist, the bare loop from its start: the same work. With watches, each round also
// times the bare loop while watches like the add-on's run, before or after the plain bare loop
// in turn. The cold start (process start, listing what it caches, taking the Lease) is a cost
// per start, not per object, and has rows of its own. Each round starts by stopping the add-on: Events still waiting for --event-qps die with it.
func (rb restartBench) run(ctx context.Context, b *testing.B, c client.Client, tb testbed.Config, cs kubernetes.Interface) restartResult {
	serverSide := func() apiserverStats {
		raw, err := cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
		if err != nil {
			b.Fatal(err)
		}
		return readAPIServerStats(string(raw), rb.resource)
	}
	// collect has the apiserver collect its garbage (its heap profile with gc=1 runs a full GC)
	// just before each clock starts, so that both windows start on the same heap.
	collect := func() {
		if err := cs.CoreV1().RESTClient().Get().AbsPath("/debug/pprof/heap").Param("gc", "1").Do(ctx).Error(); err != nil {
			b.Fatalf("collecting the apiserver's garbage: %v", err)
		}
	}
	adminRC, err := tb.RESTConfig()
	if err != nil {
		b.Fatal(err)
	}
	clock, err := watchCount(ctx, adminRC, rb.list.GroupVersion().WithResource(rb.resource), rb.ns, rb.ours, "")
	if err != nil {
		b.Fatal(err)
	}
	defer clock.Stop()
	until := func(n int) time.Time {
		at, err := clock.until(n, 5*time.Minute)
		if err != nil {
			b.Fatalf("waiting for %s in %s: %v", rb.resource, rb.ns, err)
		}
		return at
	}
	deleteAll := func() {
		kinds := append([]schema.GroupVersionKind{rb.list}, rb.also...)
		for _, list := range kinds { // each kind deleted, then all waited for together
			obj := &metav1.PartialObjectMetadata{}
			obj.SetGroupVersionKind(list.GroupVersion().WithKind(strings.TrimSuffix(list.Kind, "List")))
			if err := c.DeleteAllOf(ctx, obj, client.InNamespace(rb.ns), rb.ours); err != nil {
				b.Fatal(err)
			}
		}
		for _, list := range kinds {
			if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
				return countObjects(ctx, c, list, rb.ns, rb.ours) == 0, nil
			}); err != nil {
				b.Fatal(err)
			}
		}
		// The clock has seen every deletion: the next window counts from nothing.
		if err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
			return clock.count() == 0, nil
		}); err != nil {
			b.Fatalf("the watch of %s in %s still counts %d after their deletion", rb.resource, rb.ns, clock.count())
		}
	}
	// The add-on's Events of creation (events.k8s.io Events, read through the core API, which
	// can select them by reason).
	events, err := watchCount(ctx, adminRC, corev1.SchemeGroupVersion.WithResource("events"), rb.ns, nil, "reason="+rb.eventReason)
	if err != nil {
		b.Fatal(err)
	}
	defer events.Stop()
	var r restartResult
	rounds := rb.rounds
	if rounds == 0 {
		rounds = benchRounds()
	}
	if beforeRounds != nil {
		beforeRounds()
	}
	for round := range rounds {
		if err := testbed.StopAddon(ctx, tb, rb.addon); err != nil {
			b.Fatal(err)
		}
		deleteAll()
		// The harness's own preparation (certificate, chart render, ServiceAccount token) is
		// done before either clock starts.
		addon, err := testbed.PrepareAddon(ctx, tb, rb.addon, addonArgs()...)
		if err != nil {
			b.Fatal(err)
		}
		rc, err := clientcmd.BuildConfigFromFlags("", addon.Kubeconfig())
		if err != nil {
			b.Fatal(err)
		}
		rc.QPS, rc.Burst = rb.qps, rb.burst
		create := rb.bare(rc)
		plain := func() {
			collect()
			before := serverSide()
			cpu := sampleCPU(cpuProcesses(rb.addon)...)
			start := time.Now()
			if err := createParallel(rb.n, 16, create); err != nil {
				b.Fatal(err)
			}
			bare := until(rb.n).Sub(start)
			cpu.Stop()
			r.bare = append(r.bare, bare)
			r.bareCPU = addCPU(r.bareCPU, cpu.between(start, start.Add(bare)))
			r.bareServer = r.bareServer.plus(serverSide().minus(before))
			deleteAll()
		}
		watched := func() {
			var watches []*objectClock
			for _, gvr := range rb.watches {
				w, err := watchCount(ctx, rc, gvr, "", rb.ours, "")
				if err != nil {
					b.Fatal(err)
				}
				watches = append(watches, w)
			}
			collect()
			start := time.Now()
			if err := createParallel(rb.n, 16, create); err != nil {
				b.Fatal(err)
			}
			r.watched = append(r.watched, until(rb.n).Sub(start))
			for _, w := range watches {
				w.Stop()
			}
			deleteAll()
		}
		switch {
		case len(rb.watches) == 0 || !bareWatched:
			plain()
		case round%2 == 0:
			plain()
			watched()
		default: // every other round the other way round: neither window always comes first
			watched()
			plain()
		}

		// The clock starts as the process is started.
		eventsBefore := events.count()
		collect()
		before := serverSide()
		start := time.Now()
		if err := addon.Start(ctx, nil); err != nil {
			b.Fatal(err)
		}
		r.started = append(r.started, time.Since(start))
		cpu := sampleCPU(cpuProcesses(rb.addon)...)
		r.first = append(r.first, until(1).Sub(start))
		restart := until(rb.n).Sub(start)
		cpu.Stop()
		r.oursServer = r.oursServer.plus(serverSide().minus(before))
		acting, err := workersStarted(tb, rb.addon)
		if err != nil {
			b.Fatal(err)
		}
		r.oursCPU = addCPU(r.oursCPU, cpu.between(acting, start.Add(restart)))
		r.restart = append(r.restart, restart)
		r.acting = append(r.acting, acting.Sub(start))
		r.working = append(r.working, restart-acting.Sub(start))
		if round < rounds-1 || !waitForEvents {
			// Only the last round waits for its Events to be written: the next round
			// stops the add-on first, and the Events still waiting die with it.
			continue
		}
		written, err := events.until(eventsBefore+rb.events, 5*time.Minute)
		if err != nil {
			b.Fatalf("waiting for %s Events in %s: %v", rb.eventReason, rb.ns, err)
		}
		r.events = append(r.events, written.Sub(start))
	}
	return r
}
