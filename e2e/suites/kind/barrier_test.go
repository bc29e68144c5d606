package kind_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/e2e-framework/pkg/envconf"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/e2e/framework"
	"github.com/jobset-addons/jobset-addons/e2e/kindbed"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// barrierGroup is what one start barrier did, from the records of its pods.
type barrierGroup struct {
	pods                int
	lastArrival         time.Time       // the last pod's barrier container start
	firstMain, lastMain time.Time       // the main containers' starts
	openToMain          []time.Duration // per pod: the open annotation seen to its main container started
	openToLeave         []time.Duration // per pod: the open annotation seen to its barrier container ended
	allPrecise          bool
	nudged              []string // pods the controller told again (still at the barrier after told)
}

func (g barrierGroup) spread() time.Duration { return g.lastMain.Sub(g.firstMain) }

// group sums up the records of one attempt matching keep.
func group(recs []*podRecord, attempt string, keep func(*podRecord) bool) barrierGroup {
	g := barrierGroup{allPrecise: true}
	for _, r := range recs {
		if r.attempt != attempt || !keep(r) {
			continue
		}
		g.pods++
		if !r.nudgeSeen.IsZero() {
			g.nudged = append(g.nudged, r.name)
		}
		if r.barrierStarted.After(g.lastArrival) {
			g.lastArrival = r.barrierStarted
		}
		if r.started.IsZero() {
			continue
		}
		g.allPrecise = g.allPrecise && r.precise
		if g.firstMain.IsZero() || r.started.Before(g.firstMain) {
			g.firstMain = r.started
		}
		if r.started.After(g.lastMain) {
			g.lastMain = r.started
		}
		if !r.openSeen.IsZero() {
			g.openToMain = append(g.openToMain, r.started.Sub(r.openSeen))
			if !r.barrierEnded.IsZero() {
				g.openToLeave = append(g.openToLeave, r.barrierEnded.Sub(r.openSeen))
			}
		}
	}
	return g
}

// checkLinedUp asserts that every pod of g went through the barrier and that no main container
// started before the last pod reached the barrier, and logs the spread and the latencies.
func checkLinedUp(t *testing.T, what string, g barrierGroup, want int) {
	t.Helper()
	if g.pods != want || g.lastArrival.IsZero() || g.firstMain.IsZero() {
		t.Fatalf("%s: %d pods, last at the barrier %s, first main start %s: want %d pods through the barrier", what, g.pods, g.lastArrival, g.firstMain, want)
	}
	if !g.allPrecise {
		t.Errorf("%s: some main container's start is known only to the second (its container is gone)", what)
	}
	if g.firstMain.Before(g.lastArrival) {
		t.Errorf("%s: a main container started at %s, %s before the last pod reached the barrier (%s)", what, g.firstMain, g.lastArrival.Sub(g.firstMain), g.lastArrival)
	}
	slices.Sort(g.openToMain)
	slices.Sort(g.openToLeave)
	t.Logf("%s: %d pods; main containers started %s to %s after the last pod reached the barrier, p100 spread %s; open seen to main started: %s (p50 %s, max %s); open seen to barrier left: %s; told again: %d %q",
		what, g.pods, g.firstMain.Sub(g.lastArrival).Round(time.Millisecond), g.lastMain.Sub(g.lastArrival).Round(time.Millisecond),
		g.spread().Round(time.Millisecond), g.openToMain, pctDur(g.openToMain, 50), pctDur(g.openToMain, 100), g.openToLeave, len(g.nudged), g.nudged)
}

func pctDur(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	i := (len(ds)*p+99)/100 - 1
	return ds[max(i, 0)].Round(time.Millisecond)
}

// barrierRendezvous is the #971 JobSet of TestRendezvousTimeoutRestarts with the start barrier:
// 2 Jobs x 2 pods of the rendezvous program with a 10 s timeout, rank 3 held back 20 s by the
// user's init container at attempt 0.
func barrierRendezvous(ns, name string) *jobsetv1alpha2.JobSet {
	rj := kindbed.Rendezvous(name, "node", 2, 2, 10*time.Second)
	spec := &rj.Template.Spec.Template.Spec
	spec.InitContainers = append(spec.InitContainers, holdInit(map[string]time.Duration{"node-1-1": 20 * time.Second}))
	return kindbed.JobSet(ns, name, map[string]string{contract.StartBarrierAnnotationKey: string(contract.StartBarrierJobSet)}, 1, rj)
}

// TestStartBarrierLinesUpStarts is jobset #971 with the start barrier (issue 35), on real pods:
// the JobSet of TestRendezvousTimeoutRestarts, one pod held back 20 s, succeeds at the first
// attempt. Measured from the containers' own starts (the CRI's, to the nanosecond): no main
// container starts before the last pod reaches the barrier; the spread of the main starts and
// the kubelets' latency from the opening (the controller's patch of the pods, as seen by a
// 50 ms poll) to the main containers started are reported. The rendezvous also proves JobSet's
// network model across nodes (checkRendezvousNetwork).
func TestStartBarrierLinesUpStarts(t *testing.T) {
	f := framework.NamespacedFeature("start barrier", "a late pod: all start together, the rendezvous meets at once", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		c := framework.Client(t, cfg)
		ns := framework.NamespaceFrom(ctx)
		js := barrierRendezvous(ns, "lined-up")
		end, recs := runRecorded(ctx, t, c, js, 2)
		if end != jobsetv1alpha2.JobSetCompleted || js.Status.Restarts != 0 {
			t.Fatalf("JobSet %s after %d restart(s), want Completed at the first attempt", end, js.Status.Restarts)
		}
		for _, r := range recs {
			if r.exitCode != 0 || r.barrierExit != 0 {
				t.Errorf("rank %s (%s): barrier exit %d, main exit %d %q, want 0 and 0", r.rank, r.name, r.barrierExit, r.exitCode, r.message)
			}
		}
		g := group(recs, "0", func(*podRecord) bool { return true })
		checkLinedUp(t, "with the barrier", g, 4)
		checkRendezvousNetwork(ctx, t, c, js, "node", 4, 2)
		return ctx
	})
	testenv.Test(t, f)
}

// TestStartBarrierStages is the barrier per stage: two ReplicatedJobs in order (the sequencer's
// execution-policy InOrder, each stage after the one before completed), each 1 Job x 2 pods of
// the rendezvous program with a 10 s timeout among its own pods, one pod of each stage held back
// (20 s, 15 s). Each stage lines up its own starts and meets at the first attempt.
func TestStartBarrierStages(t *testing.T) {
	f := framework.NamespacedFeature("start barrier", "one barrier per stage", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		c := framework.Client(t, cfg)
		ns := framework.NamespaceFrom(ctx)
		const name = "stages"
		a := kindbed.Rendezvous(name, "a", 1, 2, 10*time.Second)
		b := kindbed.Rendezvous(name, "b", 1, 2, 10*time.Second)
		hold := holdInit(map[string]time.Duration{"a-0-1": 20 * time.Second, "b-0-1": 15 * time.Second})
		for _, rj := range []*jobsetv1alpha2.ReplicatedJob{&a, &b} {
			spec := &rj.Template.Spec.Template.Spec
			spec.InitContainers = append(spec.InitContainers, hold)
		}
		js := kindbed.JobSet(ns, name, map[string]string{
			contract.StartBarrierAnnotationKey:    string(contract.StartBarrierStage),
			contract.ExecutionPolicyAnnotationKey: "InOrder",
		}, 0, a, b)
		end, recs := runRecorded(ctx, t, c, js, 2)
		if end != jobsetv1alpha2.JobSetCompleted || js.Status.Restarts != 0 {
			t.Fatalf("JobSet %s after %d restart(s), want Completed at the first attempt", end, js.Status.Restarts)
		}
		ga := group(recs, "0", func(r *podRecord) bool { return r.rjob == "a" })
		gb := group(recs, "0", func(r *podRecord) bool { return r.rjob == "b" })
		checkLinedUp(t, "stage a", ga, 2)
		checkLinedUp(t, "stage b", gb, 2)
		if gb.lastArrival.Before(ga.lastMain) {
			t.Errorf("stage b's last pod reached its barrier (%s) before stage a's last main container started (%s)", gb.lastArrival, ga.lastMain)
		}
		return ctx
	})
	testenv.Test(t, f)
}

// TestStartBarrierTimeout: one pod of four can never be scheduled (a nodeSelector no node
// matches); the three others wait at the barrier and fail when its 15 s timeout passes, their
// barrier container's message naming the missing pod; no main container starts and the JobSet
// fails (no restarts allowed).
func TestStartBarrierTimeout(t *testing.T) {
	f := framework.NamespacedFeature("start barrier", "a pod never scheduled: the others fail at the timeout, naming it", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		c := framework.Client(t, cfg)
		ns := framework.NamespaceFrom(ctx)
		const name = "never"
		node := kindbed.Rendezvous(name, "node", 1, 3, 10*time.Second)
		stuck := kindbed.Rendezvous(name, "stuck", 1, 1, 10*time.Second)
		stuck.Template.Spec.Template.Spec.NodeSelector = map[string]string{"e2e.jobset-addons.io/no-such-node": "true"}
		js := kindbed.JobSet(ns, name, map[string]string{
			contract.StartBarrierAnnotationKey:        string(contract.StartBarrierJobSet),
			contract.StartBarrierTimeoutAnnotationKey: "15s",
		}, 0, node, stuck)
		end, recs := runRecorded(ctx, t, c, js, 3)
		if end != jobsetv1alpha2.JobSetFailed {
			t.Errorf("JobSet %s, want Failed", end)
		}
		var first time.Time
		failed := 0
		for _, r := range recs {
			if r.rjob == "stuck" {
				if r.node != "" {
					t.Errorf("the unschedulable pod %s ran on %s", r.name, r.node)
				}
				continue
			}
			if !r.started.IsZero() {
				t.Errorf("%s: its main container started at %s, with a pod missing", r.name, r.started)
			}
			if first.IsZero() || (!r.barrierStarted.IsZero() && r.barrierStarted.Before(first)) {
				first = r.barrierStarted
			}
			if r.barrierExit == 1 && strings.Contains(r.barrierMessage, "timed out") && strings.Contains(r.barrierMessage, name+"-stuck-0-0") {
				failed++
				t.Logf("%s: barrier left %s after the first pod reached it: %q", r.name, r.barrierEnded.Sub(first).Round(time.Millisecond), r.barrierMessage)
			}
		}
		if failed == 0 {
			t.Errorf("no waiting pod failed with a timeout naming %s-stuck-0-0", name)
		}
		msgs, err := framework.EventMessages(ctx, c, js, "StartBarrierTimedOut")
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("Events StartBarrierTimedOut: %q", msgs)
		if !slices.ContainsFunc(msgs, func(m string) bool { return strings.Contains(m, name+"-stuck-0-0") }) {
			t.Errorf("no StartBarrierTimedOut Event names %s-stuck-0-0: %q", name, msgs)
		}
		return ctx
	})
	testenv.Test(t, f)
}
