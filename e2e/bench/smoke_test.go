package bench

import (
	"context"
	"fmt"
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
		{"volumeclaims: 1,000 per-pod PVCs", "volumeclaims", false, func() []row { return []row{perPodVersusBare(ctx, b, c, tb, 25)} }},
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
		if err := testbed.StartAddon(ctx, tb, p.addon, ready, addonArgs()...); err != nil {
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
			got := -1.0
			for _, r := range rows {
				if r.key == t.key {
					got = r.value
					break
				}
			}
			status := "ok"
			if got < t.min {
				status = "BELOW"
				b.Errorf("%s: %s ratio %.2f, below its threshold %.2f (%s)", p.name, t.key, got, t.min, t.from)
			}
			checks = append(checks, row{what: p.name + ": " + t.key, ours: fmt.Sprintf("%.2f", got), baseline: fmt.Sprintf(">= %.2f", t.min), ratio: status, target: t.from})
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

// smokeThreshold: the ratio key of part's rows must be at least min. from says where min comes
// from: the target, less the noise measured in bench-smoke's own runs (docs/scale.md, *bench-smoke*).
type smokeThreshold struct {
	part, key string
	min       float64
	from      string
}

// smokeThresholds: each the lowest median bench-smoke gave in its first three runs, less 0.1,
// and at most its target less 0.3, rounded down to 0.05 (the hand-off's: 3x, the lowest p50 of
// nine runs less 40 %; docs/scale.md).
// The runs were on the 2-core machine shared with four other sessions' builds (load average 13
// to 25 in the first two, 7 to 12 in the third): that load moved single rounds of one ratio
// from 0.36 to 2.18, and medians of 3 from 0.43 to 1.31 (docs/scale.md, *bench-smoke*). A
// regression of the order of a factor 2 fails it.
var smokeThresholds = []smokeThreshold{
	{"volumeclaims", "rate", 0.55, "target 0.9; medians 1.76, 0.66, 1.59 (one round)"},
	{"resourceclaims", "rate", 0.55, "target 0.9; medians 0.95, 0.67, 0.93"},
	{"resourceclaims", "cold", 0.5, "target 0.8; medians 0.80, 0.60, 0.77"},
	{"podgroups: 300 PodGroups (volcano)", "rate", 0.3, "target 0.9; medians 0.63, 0.55, 0.43"},
	{"podgroups: 300 PodGroups (coscheduling)", "rate", 0.6, "target 0.9; medians 1.31, 1.03, 1.07"},
	{"podgroups: 300 Workloads", "rate", 0.5, "target 0.9; medians 0.91, 0.62, 0.87"},
	{"podgroups: 300 Workloads", "cold", 0.4, "target 0.8; medians 0.78, 0.54, 0.75"},
	// The peer pairs': the lowest median of bench-smoke's first three runs (2026-11-28) divided
	// by the larger of 2 and those runs' own spread (highest median over lowest), rounded down
	// to 0.05: a regression of a factor 2, or of the spread where that is wider, fails it. Their
	// ratios lie far above their target 1.0, so a threshold under the target would let a
	// factor-5 regression pass.
	{"peers: volumeclaims", "peer-time", 0.6, "target 1.0; medians 1.74, 4.95, 2.08 (spread 2.84)"},
	{"peers: volumeclaims", "peer-cpu", 0.5, "target 1.0; medians 1.72, 5.88, 2.06 (spread 3.42)"},
	{"peers: resourceclaims", "peer-time", 4.5, "target 1.0; medians 9.78, 10.8, 9.07 (spread 1.19)"},
	{"peers: resourceclaims", "peer-cpu", 4.35, "target 1.0; medians 9.92, 14.4, 8.74 (spread 1.65)"},
	{"peers: podgroups", "peer-time", 0.6, "target 1.0; Kueue's time / ours: medians 3.45, 1.46, 2.44 (spread 2.36)"},
	{"peers: podgroups", "peer-cpu", 1.1, "target 1.0; Kueue's CPU per object / ours: medians 3.16, 2.25, 2.30 (spread 1.40)"},
	{"sequencer: hand-off", "handoff", 3, "target 10x (p99); p50 of 9 runs 4.97x-49.7x (4.97x: ours 54 ms, upstream at its fastest, 268 ms); the lowest less 40%"},
	{"sequencer: release", "release", 0.6, "target 0.9; medians 1.05 (2 rounds), 1.67, 0.74"},
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
