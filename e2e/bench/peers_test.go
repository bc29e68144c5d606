package bench

import (
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/jobset-addons/jobset-addons/e2e/testbed"
)

// BenchmarkPeers (make bench ADDON=peers [SCENARIO=volumeclaims,resourceclaims,...]): each
// add-on against the controllers users would use instead, on the same testbed in the same run
// (runPeers). The testbed runs with TESTBED_KUBE_CONTROLLERS turning off, in its own
// kube-controller-manager, the controllers that the peers run in a second one of their own
// (make bench sets it), and with enough nodes for the largest side's pods (TESTBED_NODES).
func BenchmarkPeers(b *testing.B) {
	ctx := context.Background()
	c, _, tb := clients(b)
	// PEERS_SMOKE: bench-smoke's reduced pairs, to the last object (smokePeers), for
	// measuring the spread its thresholds come from.
	smoke := os.Getenv("PEERS_SMOKE") != ""
	if smoke {
		peerWaitBound = false
		defer func() { peerWaitBound = true }()
	}
	var pairs []peerPair
	addons := map[string]bool{}
	for _, s := range peerScenarios {
		if picked("peers", s.name) {
			pairs = append(pairs, s.pairs(ctx, b, tb, c, smoke)...)
			addons[s.addon] = true
		}
	}
	if len(pairs) == 0 {
		b.Skipf("%s=%q picks none of: %s", scenarioKnobs["peers"], os.Getenv(scenarioKnobs["peers"]), peerScenarioNames())
	}
	for _, a := range slices.Sorted(maps.Keys(addons)) {
		// With a Lease that a starved API server does not cost them (scaleAddonArgs): the
		// windows load 2 shared cores fully.
		if err := testbed.StartAddon(ctx, tb, a, nil, scaleAddonArgs()...); err != nil {
			b.Fatal(err)
		}
		defer func() { _ = testbed.StopAddon(ctx, tb, a) }()
	}
	runPeers(ctx, b, tb, c, pairs, 0)
}

// peerScenario is a scenario of BenchmarkPeers: the pairs of one add-on, at full size, or
// reduced for bench-smoke.
type peerScenario struct {
	name, addon string
	pairs       func(ctx context.Context, b *testing.B, tb testbed.Config, c client.Client, smoke bool) []peerPair
}

// peerScenarios are BenchmarkPeers' scenarios, in order.
var peerScenarios = []peerScenario{
	{"resourceclaims", "resourceclaims", resourceClaimsPeers},
	{"volumeclaims", "volumeclaims", volumeClaimsPeers},
}

func peerScenarioNames() string {
	var names []string
	for _, s := range peerScenarios {
		names = append(names, s.name)
	}
	return strings.Join(names, ",")
}

// peerSide is one side of a pair: it makes its objects in the fresh namespace ns and returns
// once they all exist (and their pods are bound, where it makes pods).
type peerSide struct {
	name string // "volumeclaims", "StatefulSet", "generic ephemeral volume", ...
	// procs are the /proc comm names of the processes that do its work besides the API server,
	// etcd and the testbed's other processes (peerBaseProcs): the add-on, a second
	// kube-controller-manager (peerControllerManager), ...
	procs []string
	// setup, optional, starts what the window needs (a second kube-controller-manager running
	// only the peer's controller), before the window; teardown ends it once the window's
	// namespace is gone.
	setup func(ctx context.Context, b *testing.B) (teardown func(), err error)
	run   func(ctx context.Context, b *testing.B, c client.Client, ns string) (peerResult, error)
}

type peerResult struct {
	objects    int           // objects made (PVCs, claims, gang objects)
	lastObject time.Duration // first create to the last object existing
	lastBound  time.Duration // first create to the last pod bound; 0 where no pods
	lastPod    time.Duration // first create to the last pod existing (optional: 0 where not timed)
}

// peerPair is an add-on's side against those of the controllers users would use instead.
type peerPair struct {
	name  string
	ours  peerSide
	peers []peerSide
}

// peerRow is one side of a pair over the rounds, as runPeers measured it.
type peerRow struct {
	pair, side string
	ours       bool
	objects    int
	// Per round: the times, and the CPU time of each process in the window (first create to
	// the last object or pod, whichever came last), by comm name; peerTotal is their sum.
	lastObject, lastBound, lastPod []time.Duration
	cpu                            []map[string]time.Duration
	// For a peer, against ours (medians over the rounds): objectRatio and boundRatio are the
	// peer's time ÷ ours (>= 1: ours is at least as fast); cpuRatio is ours ÷ the peer's CPU per
	// object, all processes (<= 1: ours costs no more). The *Rounds are the same per round.
	objectRatio, boundRatio, cpuRatio                   float64
	objectRatioRounds, boundRatioRounds, cpuRatioRounds []float64
}

// peerTotal is the name under which a row's cpu holds the sum of its processes.
const peerTotal = "total"

// peerBaseProcs are the testbed's processes whose CPU every window counts, whichever side runs.
var peerBaseProcs = []string{"kube-apiserver", "etcd", "kube-controller", "kube-scheduler", "kwok-controller", "jobset"}

// cpuPer1000 is the median over the rounds of process p's CPU-seconds per 1,000 objects, with
// its min and max.
func (r peerRow) cpuPer1000(p string) (med, lo, hi float64) {
	var v []float64
	for _, m := range r.cpu {
		v = append(v, m[p].Seconds()*1000/float64(r.objects))
	}
	return medianMinMax(v)
}

func medianMinMax(v []float64) (med, lo, hi float64) {
	if len(v) == 0 {
		return 0, 0, 0
	}
	s := slices.Sorted(slices.Values(v))
	return s[len(s)/2], s[0], s[len(s)-1]
}

// runPeers runs each pair's sides interleaved round by round (rounds; 0 is $BENCH_ROUNDS, 5 by
// default), each side in a namespace of its own that is deleted, with
// the volumes it leaves, before the next window; the order of the sides turns each round, so
// that none always comes first. It samples the CPU of the testbed's processes and each side's
// in every window, prints one table per pair and returns the rows, ours first in each pair.
func runPeers(ctx context.Context, b *testing.B, tb testbed.Config, c client.Client, pairs []peerPair, rounds int) []peerRow {
	if rounds == 0 {
		rounds = envIntOr("BENCH_ROUNDS", 5)
	}
	var out []peerRow
	for _, p := range pairs {
		sides := append([]peerSide{p.ours}, p.peers...)
		procs := slices.Clone(peerBaseProcs)
		for _, s := range sides {
			for _, name := range s.procs {
				if !slices.Contains(procs, name) {
					procs = append(procs, name)
				}
			}
		}
		rows := make([]peerRow, len(sides))
		for i, s := range sides {
			rows[i] = peerRow{pair: p.name, side: s.name, ours: i == 0}
		}
		for round := range rounds {
			for k := range sides {
				i := (round + k) % len(sides)
				res, cpu := runPeerWindow(ctx, b, c, p.name, sides[i], procs)
				r := &rows[i]
				if r.objects != 0 && r.objects != res.objects {
					b.Fatalf("%s, %s: %d objects in round %d, %d before", p.name, sides[i].name, res.objects, round+1, r.objects)
				}
				r.objects = res.objects
				r.lastObject = append(r.lastObject, res.lastObject)
				r.lastBound = append(r.lastBound, res.lastBound)
				r.lastPod = append(r.lastPod, res.lastPod)
				r.cpu = append(r.cpu, cpu)
				fmt.Printf("peers: %s round %d, %s: %d objects in %s, pods made in %s, bound in %s, CPU %s (load average %s)\n", p.name, round+1, sides[i].name,
					res.objects, res.lastObject.Round(time.Millisecond), res.lastPod.Round(time.Millisecond), res.lastBound.Round(time.Millisecond), cpu[peerTotal].Round(time.Millisecond), loadAverage())
			}
		}
		for i := 1; i < len(rows); i++ {
			rows[i].ratios(rows[0])
		}
		printPeerTable(p.name, rounds, procs, rows)
		out = append(out, rows...)
	}
	return out
}

// runPeerWindow runs one side once in a fresh namespace: its setup, the window (CPU sampled),
// its teardown, then the namespace deleted and waited for. cpu holds each process's CPU time
// in the window, and their sum under peerTotal.
func runPeerWindow(ctx context.Context, b *testing.B, c client.Client, pair string, s peerSide, procs []string) (peerResult, map[string]time.Duration) {
	teardown := func() {}
	if s.setup != nil {
		var err error
		if teardown, err = s.setup(ctx, b); err != nil {
			b.Fatalf("%s, %s: %v", pair, s.name, err)
		}
	}
	ns := namespace(ctx, b, c, "peers")
	sampler := sampleCPU(append(slices.Clone(procs), "bench.test")...)
	start := time.Now()
	res, err := s.run(ctx, b, c, ns)
	sampler.Stop()
	if err != nil {
		teardown()
		b.Fatalf("%s, %s: %v", pair, s.name, err)
	}
	used := sampler.between(start, start.Add(max(res.lastObject, res.lastBound)))
	cpu := map[string]time.Duration{}
	for _, p := range procs {
		cpu[p] = used[p]
		cpu[peerTotal] += used[p]
	}
	cpu["bench.test"] = used["bench.test"] // shown, not in the total: the harness's own watches
	// After the deletion: the peer's controller may have its part in it (the resourceclaim
	// controller removes its claims' finalizers).
	deleteAndWait(ctx, b, c, ns)
	teardown()
	return res, cpu
}

// deleteAndWait deletes the namespace ns and waits until its pods, PVCs and ResourceClaims are
// gone and no PersistentVolume bound to one of its claims is left, so that no deletion loads
// the next window (the namespace itself, empty, goes at the namespace controller's pace). It does the
// slow part itself (kube-controller-manager's pvc-protection and PersistentVolume controllers
// take minutes for 2,000 claims on 2 shared cores): once the pods are gone, it removes the
// claims' finalizers and deletes their volumes.
func deleteAndWait(ctx context.Context, b *testing.B, c client.Client, ns string) {
	if err := c.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); client.IgnoreNotFound(err) != nil {
		b.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(ctx, time.Second, 10*time.Minute, true, func(ctx context.Context) (bool, error) {
		var pods corev1.PodList
		if err := c.List(ctx, &pods, client.InNamespace(ns)); err != nil || len(pods.Items) > 0 {
			return false, nil
		}
		var pvcs corev1.PersistentVolumeClaimList
		if err := c.List(ctx, &pvcs, client.InNamespace(ns)); err != nil {
			return false, nil
		}
		_ = createParallel(len(pvcs.Items), 16, func(i int) error {
			return client.IgnoreNotFound(c.Patch(ctx, &pvcs.Items[i], client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`))))
		})
		var pvs corev1.PersistentVolumeList
		if err := c.List(ctx, &pvs); err != nil {
			return false, nil
		}
		var left []*corev1.PersistentVolume
		for i, pv := range pvs.Items {
			if pv.Spec.ClaimRef != nil && pv.Spec.ClaimRef.Namespace == ns {
				left = append(left, &pvs.Items[i])
			}
		}
		_ = createParallel(len(left), 16, func(i int) error {
			if err := c.Patch(ctx, left[i], client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`))); client.IgnoreNotFound(err) != nil {
				return err
			}
			return client.IgnoreNotFound(c.Delete(ctx, left[i]))
		})
		var claims resourcev1.ResourceClaimList
		if err := c.List(ctx, &claims, client.InNamespace(ns)); err != nil {
			return false, nil
		}
		return len(left) == 0 && len(pvcs.Items) == 0 && len(claims.Items) == 0, nil
	}); err != nil {
		b.Fatalf("the pods, claims and volumes of namespace %s not gone after 10 minutes", ns)
	}
}

// ratios sets the peer's ratios against ours, as medians and per round.
func (r *peerRow) ratios(ours peerRow) {
	perObject := func(row peerRow, i int) float64 { return row.cpu[i][peerTotal].Seconds() / float64(row.objects) }
	r.objectRatioRounds, r.boundRatioRounds, r.cpuRatioRounds = nil, nil, nil
	for i := range r.lastObject {
		r.objectRatioRounds = append(r.objectRatioRounds, r.lastObject[i].Seconds()/ours.lastObject[i].Seconds())
		if ours.lastBound[i] > 0 && r.lastBound[i] > 0 {
			r.boundRatioRounds = append(r.boundRatioRounds, r.lastBound[i].Seconds()/ours.lastBound[i].Seconds())
		}
		r.cpuRatioRounds = append(r.cpuRatioRounds, perObject(ours, i)/perObject(*r, i))
	}
	r.objectRatio = median(r.lastObject).Seconds() / median(ours.lastObject).Seconds()
	if median(ours.lastBound) > 0 && median(r.lastBound) > 0 {
		r.boundRatio = median(r.lastBound).Seconds() / median(ours.lastBound).Seconds()
	}
	oursCPU, _, _ := ours.cpuPer1000(peerTotal)
	peerCPU, _, _ := r.cpuPer1000(peerTotal)
	r.cpuRatio = oursCPU / peerCPU
}

// printPeerTable prints a pair's table: a column per side; rows of times, CPU per 1,000
// objects by process and in total, and each peer's ratios against ours.
func printPeerTable(pair string, rounds int, procs []string, rows []peerRow) {
	fmt.Printf("\npeers: %s (%d rounds, interleaved; median [min-max]; load average %s)\n", pair, rounds, loadAverage())
	line := func(what string, cell func(r peerRow) string) {
		fmt.Printf("%-34s", what)
		for _, r := range rows {
			fmt.Printf(" %28s", cell(r))
		}
		fmt.Println()
	}
	line("", func(r peerRow) string { return r.side })
	line("objects", func(r peerRow) string { return fmt.Sprint(r.objects) })
	dur := func(d []time.Duration) string {
		s := slices.Sorted(slices.Values(d))
		if s[len(s)-1] == 0 {
			return "-"
		}
		return fmt.Sprintf("%.1fs [%.1f-%.1f]", median(d).Seconds(), s[0].Seconds(), s[len(s)-1].Seconds())
	}
	line("last object exists", func(r peerRow) string { return dur(r.lastObject) })
	line("last pod exists", func(r peerRow) string { return dur(r.lastPod) })
	line("last pod bound", func(r peerRow) string { return dur(r.lastBound) })
	for _, p := range append(append(slices.Clone(procs), "bench.test"), peerTotal) {
		line("CPU-s per 1,000 objects: "+p, func(r peerRow) string {
			med, lo, hi := r.cpuPer1000(p)
			return fmt.Sprintf("%.2f [%.2f-%.2f]", med, lo, hi)
		})
	}
	ratio := func(med float64, rounds []float64) string {
		if len(rounds) == 0 {
			return "-"
		}
		_, lo, hi := medianMinMax(rounds)
		return fmt.Sprintf("%.2f [%.2f-%.2f]", med, lo, hi)
	}
	line("time, peer / ours (objects)", func(r peerRow) string {
		if r.ours {
			return "target >= 1.0"
		}
		return ratio(r.objectRatio, r.objectRatioRounds)
	})
	line("time, peer / ours (pods bound)", func(r peerRow) string {
		if r.ours {
			return "target >= 1.0"
		}
		return ratio(r.boundRatio, r.boundRatioRounds)
	})
	line("CPU per object, ours / peer", func(r peerRow) string {
		if r.ours {
			return "target <= 1.0"
		}
		return ratio(r.cpuRatio, r.cpuRatioRounds)
	})
	fmt.Println()
}

// peerControllerManager is a peer side's setup: a second kube-controller-manager, named comm,
// running only the controllers named, for the window (testbed.StartControllerManager).
func peerControllerManager(tb testbed.Config, comm string, controllers ...string) func(ctx context.Context, b *testing.B) (func(), error) {
	return func(ctx context.Context, b *testing.B) (func(), error) {
		if err := testbed.StartControllerManager(ctx, tb, comm, controllers...); err != nil {
			return nil, err
		}
		return func() {
			if err := testbed.StopControllerManager(tb, comm); err != nil {
				b.Errorf("stopping %s: %v", comm, err)
			}
		}, nil
	}
}
