package bench

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/e2e/testbed"
	"github.com/jobset-addons/jobset-addons/pkg/addon/addontest"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// The sequencer's release at the limit (make bench ADDON=scale SCENARIO=release, the big JobSet of
// make bench ADDON=scale, and make bench-smoke's 1,000 pods): from the Complete of a stage's
// predecessor to the last of its n gates lifted, against bare client-go loops that lift the
// same gates of pods gated the same way, in the same run: a JobSet of the same shape, sequenced
// (its pods gated by the sequencer's webhook), whose first stage does not end while the loop
// runs, so that the sequencer leaves it alone. Each JobSet is made, measured and deleted (and
// gone) before the next, so that no loop runs beside another's pods.

// The sequencer's own defaults (controllers/sequencer/main.go: QPS, burst, --pod-workers), which
// the bare loop at its limits gets too.
const seqQPS, seqBurst, seqWorkers = 200, 400, 32

// releaseLoop is one way to lift the gates: the sequencer (ours), or a bare loop.
type releaseLoop struct {
	name string
	// ours: the sequencer releases the stage, once its predecessor is Complete.
	ours bool
	// qps < 0: no client-side limit.
	qps     float32
	burst   int
	workers int
	// shape is the write: the sequencer's own patch (contract.SequencerReleasePatch) or another.
	shape releaseShape
}

// releaseShape is the write that lifts a pod's gate.
type releaseShape int

const (
	// sequencerPatch: contract.SequencerReleasePatch, a strategic merge patch of the gate and
	// the gated label.
	sequencerPatch releaseShape = iota
	// gateOnlyMerge: the same strategic merge patch without the label (the sequencer's before
	// 1a37be2).
	gateOnlyMerge
	// gateOnlyJSON: the minimum, a JSON patch that tests the gate's name and removes it.
	gateOnlyJSON
)

func (s releaseShape) String() string {
	return [...]string{"the sequencer's patch", "strategic merge patch of the gate only", "JSON patch of the gate only"}[s]
}

// patch is the shape's patch of pod p.
func (s releaseShape) patch(p *corev1.Pod) (types.PatchType, []byte) {
	switch s {
	case gateOnlyMerge:
		return types.StrategicMergePatchType, fmt.Appendf(nil, `{"spec":{"schedulingGates":[{"$patch":"delete","name":%q}]}}`, contract.SequencerSchedulingGateValue)
	case gateOnlyJSON:
		at := slices.IndexFunc(p.Spec.SchedulingGates, func(g corev1.PodSchedulingGate) bool { return g.Name == contract.SequencerSchedulingGateValue })
		return types.JSONPatchType, fmt.Appendf(nil, `[{"op":"test","path":"/spec/schedulingGates/%d/name","value":%q},{"op":"remove","path":"/spec/schedulingGates/%d"}]`,
			at, contract.SequencerSchedulingGateValue, at)
	}
	return contract.SequencerReleasePatchType, contract.SequencerReleasePatch
}

func (l releaseLoop) String() string {
	if l.ours {
		return "the sequencer (its defaults)"
	}
	limit := fmt.Sprintf("QPS %.0f, burst %d", l.qps, l.burst)
	if l.qps < 0 {
		limit = "no client-side limit"
	}
	return fmt.Sprintf("bare loop, %s, %d at once, %s", limit, l.workers, l.shape)
}

var (
	oursRelease = releaseLoop{ours: true}
	// bareAtSequencerLimits is the baseline of the add-on's cost (target >= 0.9).
	bareAtSequencerLimits = releaseLoop{qps: seqQPS, burst: seqBurst, workers: seqWorkers}
)

// releaseLoops are the loops of SCALE_BENCH=release: ours, the bare loop at the sequencer's
// limits with its patch, with its patch before 1a37be2 and with the minimum write, and without a client-side limit at each
// concurrency of $RELEASE_WORKERS (default 32,64,128,256): the fastest is what the apiserver
// can do here.
// $RELEASE_LOOPS (default all: ours,limits,gate-merge,gate-json) picks among the first four by
// name; RELEASE_WORKERS=0 leaves out the unlimited ones.
func releaseLoops(b *testing.B) []releaseLoop {
	named := map[string]releaseLoop{"ours": oursRelease, "limits": bareAtSequencerLimits,
		"gate-merge": {qps: seqQPS, burst: seqBurst, workers: seqWorkers, shape: gateOnlyMerge},
		"gate-json":  {qps: seqQPS, burst: seqBurst, workers: seqWorkers, shape: gateOnlyJSON}}
	var loops []releaseLoop
	for _, name := range strings.Split(envOr("RELEASE_LOOPS", "ours,limits,gate-merge,gate-json"), ",") {
		l, ok := named[strings.TrimSpace(name)]
		if !ok {
			b.Fatalf("RELEASE_LOOPS: unknown loop %q (want ours, limits, gate-merge or gate-json)", name)
		}
		loops = append(loops, l)
	}
	for _, w := range strings.Split(envOr("RELEASE_WORKERS", "32,64,128,256"), ",") {
		if n, err := strconv.Atoi(strings.TrimSpace(w)); err == nil && n > 0 {
			loops = append(loops, releaseLoop{qps: -1, workers: n})
		}
	}
	return loops
}

// releaseJobSet is s0 (one pod that runs until told) then s1 (jobs x pods), in order: s1's
// pods are gated by the sequencer's webhook. unscheduled names, for s1, a scheduler that does
// not run: the released pods stay Pending, and no scheduler's work on them weighs on the next
// measurement (bench-smoke's; the scale benchmark's release runs them on the testbed's scheduler).
func releaseJobSet(ns, name string, jobs, pods int, unscheduled bool) *jobsetv1alpha2.JobSet {
	s1 := addontest.ReplicatedJob("s1").Replicas(int32(jobs)).Pods(int32(pods)).Requests("10m", "")
	if unscheduled {
		s1.SchedulerName("release-bench-none")
	}
	return addontest.JobSet(ns, name).InOrder().ReplicatedJobs(
		addontest.ReplicatedJob("s0").Pods(1).Requests("10m", "").PodAnnotation(testbed.DelayAnnotationKey, "1h"), s1,
	).Obj()
}

// stagePods lists the pods of ReplicatedJob rj of JobSet name in ns.
func stagePods(ctx context.Context, c client.Client, ns, name, rj string) ([]corev1.Pod, error) {
	var pods corev1.PodList
	err := c.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{contract.JobSetNameLabelKey: name, contract.ReplicatedJobNameLabelKey: rj})
	return pods.Items, err
}

func hasSequencerGate(p *corev1.Pod) bool {
	return slices.ContainsFunc(p.Spec.SchedulingGates, func(g corev1.PodSchedulingGate) bool { return g.Name == contract.SequencerSchedulingGateValue })
}

// releaseResult is one loop's time per round.
type releaseResult struct {
	loop  releaseLoop
	times []time.Duration
	// first: to the first gate lifted
	first []time.Duration
}

func (r releaseResult) rate(n int) float64 { return float64(n) / median(r.times).Seconds() }

// releaseTogether is the most pods measureRelease makes at once: a round's JobSets of
// unscheduled pods are made together (and deleted together) when their pods are no more, one
// at a time otherwise. Pods that a scheduler takes are always one JobSet at a time: its work on
// one JobSet's released pods (most of them Pending on the full nodes, tried again and again)
// would weigh on the next loop.
const releaseTogether = 4000

// releaseRun is what measureRelease measures: each of loops releases a JobSet of jobs x pods
// of its own (unscheduled: s1's pods name a scheduler that does not run), rounds times.
type releaseRun struct {
	jobs, pods, rounds int
	unscheduled        bool
	// leave: the JobSets and their pods are not deleted between the rounds nor after them, but
	// left to the deletion of their namespace (bench-smoke's). Only for unscheduled pods, which
	// stay Pending and idle: nothing works on them while the next round is measured. A round's
	// deletion (2,000 pods with the Job controller's finalizer: some 4,000 writes) took 22 to
	// 33 s of bench-smoke's release part.
	leave bool
	loops []releaseLoop
	// enough, if set, ends the rounds early once it says the results so far decide what they
	// are for.
	enough func([]releaseResult) bool
}

// measureRelease runs each loop of r on a JobSet of its own, r.rounds times, the order of the
// loops turned by one each round, and returns each loop's times. A round's JobSets are made at
// once when they fit releaseTogether (unscheduled); each is measured after the one before it
// once a second passed without a pod's change (the watch), or a minute.
func measureRelease(ctx context.Context, b *testing.B, c client.Client, tb testbed.Config, tl *timeline, r releaseRun) []releaseResult {
	if r.leave && !r.unscheduled {
		b.Fatal("measureRelease: only unscheduled pods can be left between the rounds")
	}
	jobs, pods, loops := r.jobs, r.pods, r.loops
	n := jobs * pods
	ns := namespace(ctx, b, c, "release")
	results := make([]releaseResult, len(loops))
	for i, l := range loops {
		results[i].loop = l
	}
	batch := 1
	if r.unscheduled {
		batch = max(1, min(len(loops), releaseTogether/n))
	}
	for round := range r.rounds {
		for first := 0; first < len(loops); first += batch {
			var made []*jobsetv1alpha2.JobSet
			for k := first; k < min(first+batch, len(loops)); k++ {
				i := (k + round) % len(loops)
				js := releaseJobSet(ns, fmt.Sprintf("r%d-%d", round, i), jobs, pods, r.unscheduled)
				if err := c.Create(ctx, js); err != nil {
					b.Fatal(err)
				}
				made = append(made, js)
			}
			gated := map[string][]corev1.Pod{}
			for _, js := range made {
				gated[js.Name] = gatedStage(ctx, b, c, js, n)
			}
			for k := first; k < min(first+batch, len(loops)); k++ {
				i := (k + round) % len(loops)
				name := fmt.Sprintf("r%d-%d", round, i)
				tl.quiet(time.Second, time.Minute)
				d, first := releaseOnce(ctx, b, c, tb, tl, ns, name, gated[name], loops[i])
				results[i].times = append(results[i].times, d)
				results[i].first = append(results[i].first, first)
				fmt.Fprintf(os.Stderr, "%s release round %d: %s: %d pods in %s (%.0f pods/s), the first after %s (load %s)\n", time.Now().Format("15:04:05"),
					round, loops[i], n, d.Round(time.Millisecond), float64(n)/d.Seconds(), first.Round(time.Millisecond), loadAverage())
			}
			if !r.leave {
				deleteJobSetsNow(ctx, b, c, tb, ns, made)
			}
		}
		if r.enough != nil && r.enough(results) {
			break
		}
	}
	return results
}

// deleteJobSetsNow deletes the JobSets and their pods, and waits until no pod of ns is left.
// The garbage collector and the Job controller (which takes its tracking finalizer off each
// pod of a deleted Job, one write each) took more than a minute for 2,000 pods on a loaded
// machine: once the Jobs are gone, the pods are deleted in one request and their finalizers
// taken off here, 32 at once.
func deleteJobSetsNow(ctx context.Context, b *testing.B, c client.Client, tb testbed.Config, ns string, jobSets []*jobsetv1alpha2.JobSet) {
	for _, js := range jobSets {
		if err := c.Delete(ctx, js, client.PropagationPolicy(metav1.DeletePropagationBackground)); client.IgnoreNotFound(err) != nil {
			b.Fatal(err)
		}
	}
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
		return countObjects(ctx, c, batchv1.SchemeGroupVersion.WithKind("JobList"), ns, nil) == 0, nil
	}); err != nil {
		b.Fatalf("%s: Jobs not gone after their JobSets' deletion", ns)
	}
	admin := bareClient(b, tb, "", -1, 0)
	if err := wait.PollUntilContextTimeout(ctx, time.Second, 10*time.Minute, true, func(ctx context.Context) (bool, error) {
		// Again each time: on a loaded apiserver the collection delete outlasted its request
		// timeout (the pods it did not reach are still there, not deleted).
		_ = c.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace(ns), client.GracePeriodSeconds(0))
		var pods metav1.PartialObjectMetadataList
		pods.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("PodList"))
		if err := c.List(ctx, &pods, client.InNamespace(ns)); err != nil {
			return false, nil
		}
		_ = createParallel(len(pods.Items), 32, func(i int) error {
			if len(pods.Items[i].Finalizers) == 0 {
				return nil
			}
			_, err := admin.CoreV1().Pods(ns).Patch(ctx, pods.Items[i].Name, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
			return client.IgnoreNotFound(err)
		})
		return len(pods.Items) == 0, nil
	}); err != nil {
		b.Fatalf("%s: pods not gone after their JobSets' deletion", ns)
	}
}

// gatedStage waits until the n pods of js's s1 exist, gated, and returns them.
func gatedStage(ctx context.Context, b *testing.B, c client.Client, js *jobsetv1alpha2.JobSet, n int) []corev1.Pod {
	var gated []corev1.Pod
	if err := wait.PollUntilContextTimeout(ctx, time.Second, 20*time.Minute, true, func(ctx context.Context) (bool, error) {
		all, err := stagePods(ctx, c, js.Namespace, js.Name, "s1")
		if err != nil {
			return false, nil
		}
		gated = slices.DeleteFunc(all, func(p corev1.Pod) bool { return !hasSequencerGate(&p) })
		return len(gated) == n, nil
	}); err != nil {
		b.Fatalf("%s/%s: %d of %d s1 pods gated", js.Namespace, js.Name, len(gated), n)
	}
	return gated
}

// releaseOnce has loop lift the gates of JobSet name's gated s1 pods: ours from s0 Complete
// (told to end now), a bare loop from its first patch, to the last pod a watch shows ungated
// (all), and to the first (first: for ours, its reaction to s0's Complete).
func releaseOnce(ctx context.Context, b *testing.B, c client.Client, tb testbed.Config, tl *timeline, ns, name string, gated []corev1.Pod, loop releaseLoop) (all, first time.Duration) {
	n := len(gated)
	var start time.Time
	if loop.ours {
		s0, err := stagePods(ctx, c, ns, name, "s0")
		if err != nil || len(s0) != 1 {
			b.Fatalf("%s/%s: s0 pods: %d, %v", ns, name, len(s0), err)
		}
		// kwok takes the new delay at once: s0's pod completes, then its Job.
		patch := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:"0s"}}}`, testbed.DelayAnnotationKey)
		if err := c.Patch(ctx, &s0[0], client.RawPatch(types.MergePatchType, patch)); err != nil {
			b.Fatal(err)
		}
	} else {
		cs := bareClient(b, tb, "sequencer", loop.qps, loop.burst)
		start = time.Now()
		if err := createParallel(n, loop.workers, func(i int) error {
			p := &gated[i]
			pt, body := loop.shape.patch(p)
			_, err := cs.CoreV1().Pods(ns).Patch(ctx, p.Name, pt, body, metav1.PatchOptions{})
			return err
		}); err != nil {
			b.Fatal(err)
		}
	}
	stage := ns + "/" + name + "/s1"
	var firstAt, last time.Time
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 20*time.Minute, true, func(context.Context) (bool, error) {
		tl.mu.Lock()
		defer tl.mu.Unlock()
		ungated := 0
		for uid, key := range tl.podKey {
			if key != stage {
				continue
			}
			if at, ok := tl.ungated[uid]; ok {
				ungated++
				last = latest(last, at)
				if firstAt.IsZero() || at.Before(firstAt) {
					firstAt = at
				}
			}
		}
		if loop.ours && ungated == n {
			for key, at := range tl.complete {
				if strings.HasPrefix(key, ns+"/"+name+"/s0/") {
					start = at
				}
			}
		}
		return ungated == n && !start.IsZero(), nil
	}); err != nil {
		b.Fatalf("%s: the gates of %s not all lifted", loop, stage)
	}
	return last.Sub(start), firstAt.Sub(start)
}

// releaseRows are the table of a release: each loop's median, pods a second, and its ratio to
// ours (baseline / ours, as every ratio here: >= 1 is ours as fast).
func releaseRows(results []releaseResult, n int) []row {
	var ours releaseResult
	for _, r := range results {
		if r.loop.ours {
			ours = r
		}
	}
	var rows []row
	for _, r := range results {
		what := fmt.Sprintf("%d gates lifted: %s (median of %d)", n, r.loop, len(r.times))
		rw := row{what: what, ours: fmt.Sprintf("%s, %.0f/s", median(r.times).Round(time.Millisecond), r.rate(n)), target: "-"}
		if !r.loop.ours && len(ours.times) > 0 {
			ratio := median(r.times).Seconds() / median(ours.times).Seconds()
			rw = row{what: what, ours: median(ours.times).Round(time.Millisecond).String(),
				baseline: fmt.Sprintf("%s, %.0f/s", median(r.times).Round(time.Millisecond), r.rate(n)), ratio: fmt.Sprintf("%.2f", ratio), value: ratio, target: "-"}
			if r.loop == bareAtSequencerLimits {
				rw.target, rw.key = "ratio >= 0.9", "release"
			}
		}
		rows = append(rows, rw, row{what: "  each round; the first gate lifted after (median)", ours: roundTimes(r.times), baseline: fmtSeconds(median(r.first).Seconds()), target: "-"})
	}
	return rows
}

// roundTimes lists durations as "1.2s 1.4s".
func roundTimes(ds []time.Duration) string {
	var parts []string
	for _, d := range ds {
		parts = append(parts, fmtSeconds(d.Seconds()))
	}
	return strings.Join(parts, " ")
}

// releaseScenario: SCALE_BENCH=release, the release alone: SCALE_BIG_JOBS x SCALE_BIG_PODS pods,
// $RELEASE_ROUNDS rounds (default 1), every loop of releaseLoops.
func releaseScenario(ctx context.Context, b *testing.B, c client.Client, tb testbed.Config, tl *timeline, jobs, pods int) {
	// RELEASE_UNSCHEDULED=1: s1's pods name a scheduler that does not run (as bench-smoke's), so
	// that a round's JobSets are made together and no scheduler's work weighs on the next loop.
	unscheduled := os.Getenv("RELEASE_UNSCHEDULED") == "1"
	results := measureRelease(ctx, b, c, tb, tl, releaseRun{jobs: jobs, pods: pods, rounds: envIntOr("RELEASE_ROUNDS", 1), unscheduled: unscheduled, loops: releaseLoops(b)})
	printTable(fmt.Sprintf("release: s1 of %d Jobs x %d pods, from s0 Complete (ours) or the loop's start", jobs, pods), releaseRows(results, jobs*pods))
}
