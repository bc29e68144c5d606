package bench

import (
	"context"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/jobset-addons/jobset-addons/e2e/testbed"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// BenchmarkSmoke (make bench-smoke, which make test runs): a reduced run of each add-on's
// headline benchmark, each measured against its baseline in the same run (a bare client-go loop
// at the add-on's limits, or upstream JobSet), and a failure when a ratio falls below its
// threshold in smokeThresholds. Ratios only, never an absolute time: the machine's speed and
// load move both sides of a ratio alike. $SMOKE_ROUNDS (default 3) rounds of ours against the
// baseline, interleaved, where the benchmark has rounds; the ratio checked is their median.
func BenchmarkSmoke(b *testing.B) {
	ctx := context.Background()
	c, cs, tb := clients(b)
	if err := testbed.InstallGangCRDs(ctx, tb); err != nil {
		b.Fatal(err)
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	tl := watchTimeline(wctx, b, cs)
	rounds := envIntOr("SMOKE_ROUNDS", 3)
	waitForEvents, bareWatched = false, false
	// clean: the part's rounds start once the namespaces of the parts before it are gone
	// (beforeRounds), so that its add-on lists and reconciles its own objects only: its cold
	// starts, and the Volcano part's rounds, where podgroups once reconciled the kubernetes
	// part's 300 JobSets as their namespace went. Its setup overlaps their deletion. The others
	// start while those are deleted, which loads ours and the baseline alike. The release comes
	// last: its pods are left to its namespace's deletion (releaseRun.leave), which nothing
	// measured follows.
	parts := []struct {
		name, addon string
		clean       bool
		run         func() []row
	}{
		{"resourceclaims: 300 claims", "resourceclaims", true, func() []row { return claimsVersusBare(ctx, b, c, cs, tb, 60, rounds) }},
		{"podgroups: 300 Workloads + PodGroups (kubernetes)", "podgroups", true, func() []row { return nativeVersusBare(ctx, b, c, cs, tb, 300, rounds) }},
		{"podgroups: 300 PodGroups (volcano)", "podgroups", true, func() []row {
			return podGroupsVersusBare(ctx, b, c, cs, tb, contract.SchedulerVolcano, 300, rounds)
		}},
		{"podgroups: 300 PodGroups (coscheduling)", "podgroups", true, func() []row {
			return podGroupsVersusBare(ctx, b, c, cs, tb, contract.SchedulerCoscheduling, 300, rounds)
		}},
		{"volumeclaims: 1,000 per-pod PVCs", "volumeclaims", false, func() []row { return []row{perPodVersusBare(ctx, b, c, tb, 25, rounds)} }},
		{"peers: volumeclaims", "volumeclaims", false, func() []row { return smokePeers(ctx, b, tb, c, volumeClaimsPeers, min(rounds, 2)) }},
		{"peers: resourceclaims", "resourceclaims", false, func() []row { return smokePeers(ctx, b, tb, c, resourceClaimsPeers, min(rounds, 2)) }},
		{"peers: podgroups", "podgroups", false, func() []row { return smokePeers(ctx, b, tb, c, podGroupsPeers, min(rounds, 2)) }},
		{"sequencer: hand-off of 20 chains against upstream", "sequencer", false, func() []row { return handoffVersusUpstream(ctx, b, c, tb, tl, 20) }},
		{"sequencer: release of 1,000 pods", "sequencer", false, func() []row { return smokeRelease(ctx, b, c, tb, tl, rounds) }},
	}
	start := time.Now()
	fmt.Printf("bench-smoke: load average at the start %s\n", loadAverage())
	var checks []row
	deleted := map[string]bool{}
	for _, p := range parts {
		partStart := time.Now()
		waited := false
		beforeRounds = nil
		if p.clean {
			beforeRounds = func() { waitNamespacesGone(ctx, b, c, deleted); waited = true }
		}
		var ready func(context.Context) error
		if p.addon == "sequencer" {
			ready = sequencerAnswers(c)
		}
		if err := testbed.StartAddon(ctx, tb, p.addon, ready, scaleAddonArgs()...); err != nil {
			b.Fatal(err)
		}
		before := namespaceNames(ctx, b, c)
		rows := p.run()
		if p.clean && !waited {
			b.Fatalf("%s: its rounds did not wait for the namespaces before it to be gone", p.name)
		}
		if err := testbed.StopAddon(ctx, tb, p.addon); err != nil {
			b.Fatal(err)
		}
		deleteNamespacesSince(ctx, b, c, before, deleted)
		printTable(fmt.Sprintf("%s (%s; load average %s)", p.name, time.Since(partStart).Round(time.Second), loadAverage()), rows)
		for _, t := range smokeThresholds {
			if !strings.HasPrefix(p.name, t.part) {
				continue
			}
			got, found := math.NaN(), false
			for _, r := range rows {
				if r.key == t.key {
					got, found = r.value, true
					break
				}
			}
			status, bound := t.judge(got, found)
			if status == "BELOW" || status == "ABOVE" || status == "MISSING" {
				b.Errorf("%s: %s %.3g, %s its bound %s (%s)", p.name, t.key, got, strings.ToLower(status), bound, t.from)
			}
			checks = append(checks, row{what: p.name + ": " + t.key, ours: fmt.Sprintf("%.2f", got), baseline: bound, ratio: status, target: t.from})
		}
	}
	beforeRounds = nil
	printTable(fmt.Sprintf("bench-smoke: ratios checked (%s; load average at the end %s)", time.Since(start).Round(time.Second), loadAverage()), checks)
}

// smokeRelease: the release of 1,000 pods by the sequencer against the bare loop at its limits,
// round by round, interleaved, until the rounds decide the check as a median of rounds would: a
// majority of them at or above the threshold, or below it. Of 3, two rounds that agree decide
// it whatever a third would give, and a third is run only when they fall on either side (each
// round makes 2,000 pods and times two loops, 20 to 30 s). The ratio checked is the median of
// the rounds' ratios (bare / ours), the lower of two: on the same side of the threshold as a
// median of all rounds.
func smokeRelease(ctx context.Context, b *testing.B, c client.Client, tb testbed.Config, tl *timeline, rounds int) []row {
	t := thresholdOf("sequencer: release", "release")
	ratios := func(results []releaseResult) []float64 {
		var r []float64
		for i := range results[0].times {
			r = append(r, results[1].times[i].Seconds()/results[0].times[i].Seconds())
		}
		return r
	}
	majority := rounds/2 + 1
	// Its rounds' JobSets are left to the namespace's deletion after the part (leave): the
	// release is bench-smoke's last part, so that nothing else runs while that goes on.
	results := measureRelease(ctx, b, c, tb, tl, releaseRun{jobs: 10, pods: 100, rounds: rounds, unscheduled: true, leave: true,
		loops: []releaseLoop{oursRelease, bareAtSequencerLimits}, enough: func(results []releaseResult) bool {
			above := 0
			r := ratios(results)
			for _, x := range r {
				if x >= t {
					above++
				}
			}
			return above >= majority || len(r)-above >= majority
		}})
	rows := releaseRows(results, 1000)
	for i := range rows {
		rows[i].key = "" // checked below, round by round
	}
	r := ratios(results)
	checked := slices.Sorted(slices.Values(r))[(len(r)-1)/2]
	return append(rows, row{
		what: fmt.Sprintf("  each round, bare / ours (%d of up to %d: a majority decides)", len(r), rounds), ours: roundRatios(results[0].times, results[1].times),
		ratio: fmt.Sprintf("%.2f", checked), target: "median >= 0.9", key: "release", value: checked,
	})
}

// smokePeers runs an add-on's reduced peer pair (its pairs with smoke set) for rounds rounds, each
// window until the last object exists (peerWaitBound off: the pods' binding waits on the
// scheduler's backoff, tens of seconds that would decide nothing), and returns its peer's ratios
// as checked rows: "peer-time", the peer's time to its last object over ours, and "peer-cpu",
// the peer's CPU per object over ours (both >= 1 when ours is at least as fast and as cheap).
func smokePeers(ctx context.Context, b *testing.B, tb testbed.Config, c client.Client, pairs func(context.Context, *testing.B, testbed.Config, client.Client, bool) []peerPair, rounds int) []row {
	peerWaitBound = false
	defer func() { peerWaitBound = true }()
	var rows []row
	for _, r := range runPeers(ctx, b, tb, c, pairs(ctx, b, tb, c, true), rounds) {
		if r.ours {
			continue
		}
		rows = append(rows,
			row{what: r.side + ": time to the last object, peer / ours", ours: fmt.Sprintf("%.2f", r.objectRatio), target: ">= 1.0", key: "peer-time", value: r.objectRatio},
			row{what: r.side + ": CPU per object, peer / ours", ours: fmt.Sprintf("%.2f", 1/r.cpuRatio), target: ">= 1.0", key: "peer-cpu", value: 1 / r.cpuRatio})
	}
	return rows
}

// thresholdOf is the smokeThresholds minimum of part's key.
func thresholdOf(part, key string) float64 {
	for _, t := range smokeThresholds {
		if strings.HasPrefix(part, t.part) && t.key == key {
			return t.min
		}
	}
	panic("no bench-smoke threshold for " + part + " " + key)
}

// smokeThreshold: the value of part's row key must be at least min (a ratio of ours against
// a baseline of our own making, in the same run), or at most max (our own latency, in seconds, or
// a count that must stay 0); one of the two is set. A report-only entry (report set) is printed
// beside the checked ones and never fails: its baseline is a peer's speed (upstream JobSet,
// a StatefulSet, a ResourceClaimTemplate, Kueue), which moves with the machine and its load
// independently of ours, so it says nothing about a regression of ours. from says where the
// bound comes from (docs/performance/scale.md, *bench-smoke*).
type smokeThreshold struct {
	part, key string
	min, max  float64
	report    bool
	from      string
}

// judge returns the row's status in the checked table ("ok", "BELOW", "ABOVE", "MISSING" or
// "reported") and the bound as printed.
func (t smokeThreshold) judge(got float64, found bool) (status, bound string) {
	switch {
	case t.report:
		return "reported", "-"
	case t.max > 0 || t.min == 0:
		bound = fmt.Sprintf("<= %.2f", t.max)
	default:
		bound = fmt.Sprintf(">= %.2f", t.min)
	}
	switch {
	case !found || math.IsNaN(got):
		return "MISSING", bound
	case strings.HasPrefix(bound, "<=") && got > t.max:
		return "ABOVE", bound
	case strings.HasPrefix(bound, ">=") && got < t.min:
		return "BELOW", bound
	}
	return "ok", bound
}

// smokeThresholds: each ratio's minimum is the lowest median bench-smoke gave in its first three
// runs, less 0.1, and at most its target less 0.3, rounded down to 0.05.
// The runs were on the 2-core machine shared with four other sessions' builds (load average 13
// to 25 in the first two, 7 to 12 in the third): that load moved single rounds of one ratio
// from 0.36 to 2.18, and medians of 3 from 0.43 to 1.31 (docs/scale.md, *bench-smoke*). A
// regression of the order of a factor 2 fails it.
var smokeThresholds = []smokeThreshold{
	{part: "volumeclaims", key: "rate", min: 0.55, from: "target 0.9; medians 1.76, 0.66, 1.59 (one round)"},
	{part: "resourceclaims", key: "rate", min: 0.55, from: "target 0.9; medians 0.95, 0.67, 0.93"},
	{part: "resourceclaims", key: "cold", min: 0.5, from: "target 0.8; medians 0.80, 0.60, 0.77"},
	{part: "podgroups: 300 PodGroups (volcano)", key: "rate", min: 0.3, from: "target 0.9; medians 0.63, 0.55, 0.43"},
	{part: "podgroups: 300 PodGroups (coscheduling)", key: "rate", min: 0.6, from: "target 0.9; medians 1.31, 1.03, 1.07"},
	{part: "podgroups: 300 Workloads", key: "rate", min: 0.5, from: "target 0.9; medians 0.91, 0.62, 0.87"},
	{part: "podgroups: 300 Workloads", key: "cold", min: 0.4, from: "target 0.8; medians 0.78, 0.54, 0.75"},
	// The peer pairs and the hand-off against upstream: reported, not checked (their baseline
	// is a peer's speed). Their figures over runs: docs/performance/scale.md.
	{part: "peers: volumeclaims", key: "peer-time", report: true, from: "target 1.0 (the same JobSet with an ephemeral volume: its time / ours)"},
	{part: "peers: volumeclaims", key: "peer-cpu", report: true, from: "target 1.0 (the same JobSet with an ephemeral volume: its CPU per PVC / ours)"},
	{part: "peers: resourceclaims", key: "peer-time", report: true, from: "target 1.0 (the template's time / ours)"},
	{part: "peers: resourceclaims", key: "peer-cpu", report: true, from: "target 1.0 (the template's CPU per claim / ours)"},
	{part: "peers: podgroups", key: "peer-time", report: true, from: "target 1.0 (Kueue's time / ours)"},
	{part: "peers: podgroups", key: "peer-cpu", report: true, from: "target 1.0 (Kueue's CPU per object / ours)"},
	{part: "sequencer: hand-off", key: "handoff", report: true, from: "target 10x (p99) against upstream dependsOn"},
	// The sequencer's own part of the hand-off, from a stage's Complete (as the bench's watch saw
	// it) to the last gate of the next stage lifted: p50 23 to 39 ms and p99 under 100 ms on a
	// quiet machine, 82 to 113 ms (first gate) at load 7 to 25. One second is the hand-off's whole
	// target (300 ms) more than three times over; a lost watch or a fall-back to the periodic
	// resync, the regressions it catches, take 10 s and more.
	{part: "sequencer: hand-off", key: "lifted-p99", max: 1.0, from: "target 0.3 s for the whole hand-off (p99)"},
	{part: "sequencer: hand-off", key: "handoff-missing", max: 0, from: "every stage of every chain runs"},
	{part: "sequencer: release", key: "release", min: 0.6, from: "target 0.9; medians 1.05 (2 rounds), 1.67, 0.74"},
}

// namespaceNames are the names of the namespaces there now.
func namespaceNames(ctx context.Context, b *testing.B, c client.Client) map[string]bool {
	var list corev1.NamespaceList
	if err := c.List(ctx, &list); err != nil {
		b.Fatal(err)
	}
	names := map[string]bool{}
	for _, ns := range list.Items {
		names[ns.Name] = true
	}
	return names
}

// deleteNamespacesSince deletes the namespaces not in before (those a part made: the add-ons'
// own, made when the first starts, is in every part's before), adds them to deleted, and does
// not wait.
func deleteNamespacesSince(ctx context.Context, b *testing.B, c client.Client, before, deleted map[string]bool) {
	for name := range namespaceNames(ctx, b, c) {
		if !before[name] {
			deleted[name] = true
			if err := c.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); client.IgnoreNotFound(err) != nil {
				b.Fatal(err)
			}
		}
	}
}

// waitNamespacesGone waits until none of the deleted namespaces is left.
func waitNamespacesGone(ctx context.Context, b *testing.B, c client.Client, deleted map[string]bool) {
	if err := wait.PollUntilContextTimeout(ctx, time.Second, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
		for name := range namespaceNames(ctx, b, c) {
			if deleted[name] {
				return false, nil
			}
		}
		return true, nil
	}); err != nil {
		b.Fatal("the namespaces of the parts before not gone after 5 minutes")
	}
}

// loadAverage is the machine's 1, 5 and 15 minute load averages.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}
