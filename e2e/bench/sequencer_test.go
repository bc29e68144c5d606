package bench

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/e2e/testbed"
	"github.com/jobset-addons/jobset-addons/pkg/addon/addontest"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// The sequencer benchmark: seqJobSets JobSets, each a chain of seqStages ReplicatedJobs of
// seqReplicas Jobs of one pod that runs seqRun, sequenced by the sequencer (InOrder, Complete),
// and as many identical JobSets sequenced by upstream JobSet's own dependsOn (Complete), all
// created at once in the same run. BENCH_SEQUENCER_REPLICAS sets seqReplicas (default 1): 2
// doubles the Jobs and pods, and the load.
const (
	seqJobSets = 50
	seqStages  = 3
	seqRun     = "3s"
)

var seqReplicas = func() int32 {
	if n, err := strconv.Atoi(os.Getenv("BENCH_SEQUENCER_REPLICAS")); err == nil && n > 0 {
		return int32(n)
	}
	return 1
}()

var seqStageNames = []string{"s0", "s1", "s2"}

// chainJobSet is one JobSet of the benchmark; sequencer picks our annotations over upstream
// dependsOn.
func chainJobSet(ns, name string, sequencer bool) *jobsetv1alpha2.JobSet {
	js := addontest.JobSet(ns, name)
	if sequencer {
		js.InOrder()
	}
	for i, rj := range seqStageNames {
		r := addontest.ReplicatedJob(rj).Replicas(seqReplicas).Pods(1).CompletionMode(nil).
			PodAnnotation(testbed.DelayAnnotationKey, seqRun)
		if !sequencer && i > 0 {
			r.DependsOn(seqStageNames[i-1])
		}
		js.ReplicatedJobs(r)
	}
	return js.Obj()
}

// timeline records, as this process's watches see them, when each Job was first Complete and
// when each pod was first seen and first bound to a node.
type timeline struct {
	mu       sync.Mutex
	complete map[string]time.Time // namespace/jobset/rj/job -> Complete
	seen     map[string]time.Time // pod UID -> first seen
	bound    map[string]time.Time // pod UID -> first bound
	ungated  map[string]time.Time // pod UID -> first seen without the sequencer's gate
	podKey   map[string]string    // pod UID -> namespace/jobset/rj
	last     time.Time            // the last event of a pod
}

// quiet waits until a period passed without a pod's event, up to limit.
func (tl *timeline) quiet(period, limit time.Duration) {
	for deadline := time.Now().Add(limit); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		tl.mu.Lock()
		last := tl.last
		tl.mu.Unlock()
		if time.Since(last) >= period {
			return
		}
	}
}

func stageKey(o metav1.Object) string {
	l := o.GetLabels()
	return o.GetNamespace() + "/" + l[contract.JobSetNameLabelKey] + "/" + l[contract.ReplicatedJobNameLabelKey]
}

func (tl *timeline) job(obj any) {
	j, ok := obj.(*batchv1.Job)
	if !ok {
		return
	}
	for _, c := range j.Status.Conditions {
		if c.Type == batchv1.JobComplete && c.Status == corev1.ConditionTrue {
			now := time.Now()
			tl.mu.Lock()
			if _, ok := tl.complete[stageKey(j)+"/"+j.Name]; !ok {
				tl.complete[stageKey(j)+"/"+j.Name] = now
			}
			tl.mu.Unlock()
		}
	}
}

func (tl *timeline) pod(obj any) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	now := time.Now()
	uid := string(p.UID)
	tl.mu.Lock()
	defer tl.mu.Unlock()
	tl.last = now
	tl.podKey[uid] = stageKey(p)
	if _, ok := tl.seen[uid]; !ok {
		tl.seen[uid] = now
	}
	if _, ok := tl.bound[uid]; !ok && p.Spec.NodeName != "" {
		tl.bound[uid] = now
	}
	if _, ok := tl.ungated[uid]; !ok && !slices.ContainsFunc(p.Spec.SchedulingGates, func(g corev1.PodSchedulingGate) bool { return g.Name == contract.SequencerSchedulingGateValue }) {
		tl.ungated[uid] = now
	}
}

// watchTimeline starts informers on every JobSet's Jobs and Pods.
func watchTimeline(ctx context.Context, b *testing.B, cs kubernetes.Interface) *timeline {
	tl := &timeline{complete: map[string]time.Time{}, seen: map[string]time.Time{}, bound: map[string]time.Time{}, ungated: map[string]time.Time{}, podKey: map[string]string{}}
	f := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.LabelSelector = contract.JobSetNameLabelKey
	}))
	h := func(fn func(any)) cache.ResourceEventHandlerFuncs {
		return cache.ResourceEventHandlerFuncs{AddFunc: fn, UpdateFunc: func(_, o any) { fn(o) }}
	}
	if _, err := f.Batch().V1().Jobs().Informer().AddEventHandler(h(tl.job)); err != nil {
		b.Fatal(err)
	}
	if _, err := f.Core().V1().Pods().Informer().AddEventHandler(h(tl.pod)); err != nil {
		b.Fatal(err)
	}
	f.Start(ctx.Done())
	f.WaitForCacheSync(ctx.Done())
	return tl
}

// handoffs are, for every JobSet of ns and every stage after the first, the time from its
// predecessor's last Job Complete to its last pod bound; early counts the pods first seen
// before their predecessor's last Job was Complete.
func (tl *timeline) handoffs(ns string, names []string) (handoffs, releases []time.Duration, early int, missing int) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	lastComplete := map[string]time.Time{}
	jobs := map[string]int{}
	for key, at := range tl.complete {
		stage := key[:len(key)-len(lastSegment(key))-1]
		jobs[stage]++
		if at.After(lastComplete[stage]) {
			lastComplete[stage] = at
		}
	}
	lastBound, lastUngated := map[string]time.Time{}, map[string]time.Time{}
	pods := map[string]int{}
	firstSeen := map[string][]time.Time{}
	for uid, key := range tl.podKey {
		firstSeen[key] = append(firstSeen[key], tl.seen[uid])
		if at, ok := tl.bound[uid]; ok {
			pods[key]++
			if at.After(lastBound[key]) {
				lastBound[key] = at
			}
		}
		if at, ok := tl.ungated[uid]; ok && at.After(lastUngated[key]) {
			lastUngated[key] = at
		}
	}
	for _, name := range names {
		for s := 1; s < len(seqStageNames); s++ {
			prev := ns + "/" + name + "/" + seqStageNames[s-1]
			next := ns + "/" + name + "/" + seqStageNames[s]
			if jobs[prev] < int(seqReplicas) || pods[next] < int(seqReplicas) {
				missing++
				continue
			}
			handoffs = append(handoffs, lastBound[next].Sub(lastComplete[prev]))
			releases = append(releases, lastUngated[next].Sub(lastComplete[prev]))
			for _, seen := range firstSeen[next] {
				if seen.Before(lastComplete[prev]) {
					early++
				}
			}
		}
	}
	return handoffs, releases, early, missing
}

func lastSegment(key string) string {
	for i := len(key) - 1; i >= 0; i-- {
		if key[i] == '/' {
			return key[i+1:]
		}
	}
	return key
}

func percentile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(q*float64(len(s)) + 0.5)
	return s[min(max(i-1, 0), len(s)-1)]
}

// objectsPerJobSet counts, in ns, the objects of each kind the JobSets made, per JobSet.
func objectsPerJobSet(ctx context.Context, c client.Client, ns string, jobSets int) map[string]float64 {
	out := map[string]float64{}
	for kind, list := range map[string]client.ObjectList{
		"Jobs": &batchv1.JobList{}, "Pods": &corev1.PodList{}, "Services": &corev1.ServiceList{}, "Events": &corev1.EventList{},
	} {
		if err := c.List(ctx, list, client.InNamespace(ns)); err == nil {
			out[kind] = float64(apimeta.LenList(list)) / float64(jobSets)
		}
	}
	return out
}

// sequencerAnswers passes once the apiserver calls the sequencer's mutating webhook: a dry-run
// create of a sequenced JobSet comes back gated.
func sequencerAnswers(c client.Client) func(context.Context) error {
	return func(ctx context.Context) error {
		js := chainJobSet(corev1.NamespaceDefault, "probe", true)
		if err := c.Create(ctx, js, client.DryRunAll); err != nil {
			return err
		}
		for _, g := range js.Spec.ReplicatedJobs[1].Template.Spec.Template.Spec.SchedulingGates {
			if g.Name == contract.SequencerSchedulingGateValue {
				return nil
			}
		}
		return fmt.Errorf("the JobSet came back without the scheduling gate")
	}
}

// BenchmarkSequencer runs the sequencer on the testbed, sequences the chains both ways at once
// and prints the hand-off times: the scenario handoff of SEQUENCER_BENCH.
func BenchmarkSequencer(b *testing.B) {
	if !picked("sequencer", "handoff") {
		b.Skipf("SEQUENCER_BENCH=%q does not pick handoff", os.Getenv("SEQUENCER_BENCH"))
	}
	ctx := context.Background()
	c, cs, tb := clients(b)
	if err := testbed.StartAddon(ctx, tb, "sequencer", sequencerAnswers(c)); err != nil {
		b.Fatal(err)
	}
	defer func() { _ = testbed.StopAddon(ctx, tb, "sequencer") }()
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	rows := handoffVersusUpstream(ctx, b, c, tb, watchTimeline(wctx, b, cs), seqJobSets)
	fmt.Printf("\n%-58s %14s %14s %8s  %s\n", fmt.Sprintf("sequencer (%d chains of %d stages x %d Jobs, pods run %s)", seqJobSets, seqStages, seqReplicas, seqRun), "ours", "upstream", "ratio", "target")
	for _, r := range rows {
		fmt.Printf("%-58s %14s %14s %8s  %s\n", r.what, r.ours, r.baseline, r.ratio, r.target)
	}
	fmt.Println()
}

// handoffVersusUpstream: jobSets chains sequenced by the sequencer (running) and as many by
// upstream dependsOn, created at once, interleaved; the hand-off times of both, as rows.
func handoffVersusUpstream(ctx context.Context, b *testing.B, c client.Client, tb testbed.Config, tl *timeline, jobSets int) []row {
	ours, upstream := namespace(ctx, b, c, "bench-seq"), namespace(ctx, b, c, "bench-upstream")
	var names []string
	for i := range jobSets {
		names = append(names, fmt.Sprintf("chain-%d", i))
	}
	start := time.Now()
	// Interleaved, so that neither way gets the quieter cluster.
	if err := createParallel(2*jobSets, 8, func(i int) error {
		return c.Create(ctx, chainJobSet(map[bool]string{true: ours, false: upstream}[i%2 == 0], names[i/2], i%2 == 0))
	}); err != nil {
		b.Fatal(err)
	}
	finished := map[string]time.Duration{}
	err := wait.PollUntilContextTimeout(ctx, time.Second, 10*time.Minute, false, func(ctx context.Context) (bool, error) {
		for _, ns := range []string{ours, upstream} {
			if _, ok := finished[ns]; ok {
				continue
			}
			var list jobsetv1alpha2.JobSetList
			if err := c.List(ctx, &list, client.InNamespace(ns)); err != nil {
				return false, nil
			}
			done := 0
			for _, js := range list.Items {
				for _, cond := range js.Status.Conditions {
					if cond.Status == metav1.ConditionTrue && (cond.Type == string(jobsetv1alpha2.JobSetCompleted) || cond.Type == string(jobsetv1alpha2.JobSetFailed)) {
						done++
					}
				}
			}
			if done == jobSets {
				finished[ns] = time.Since(start)
			}
		}
		return len(finished) == 2, nil
	})
	if err != nil {
		b.Fatalf("the JobSets did not finish: %v (finished: %v)", err, finished)
	}
	time.Sleep(2 * time.Second) // the last watch events
	oursH, oursRel, oursEarly, oursMissing := tl.handoffs(ours, names)
	upH, _, upEarly, upMissing := tl.handoffs(upstream, names)
	oursObjs, upObjs := objectsPerJobSet(ctx, c, ours, jobSets), objectsPerJobSet(ctx, c, upstream, jobSets)

	value := func(q float64) float64 {
		if o := percentile(oursH, q); o > 0 {
			return float64(percentile(upH, q)) / float64(o)
		}
		return 0
	}
	ratio := func(q float64) string {
		if v := value(q); v > 0 {
			return fmt.Sprintf("%.1fx", v)
		}
		return "-"
	}
	sec := func(d time.Duration) string { return fmtSeconds(d.Seconds()) }
	rows := []row{
		{what: fmt.Sprintf("hand-off p50 (%d hand-offs each)", len(oursH)), ours: sec(percentile(oursH, 0.5)), baseline: sec(percentile(upH, 0.5)), ratio: ratio(0.5), target: "-", key: "handoff", value: value(0.5)},
		{what: "hand-off p99", ours: sec(percentile(oursH, 0.99)), baseline: sec(percentile(upH, 0.99)), ratio: ratio(0.99), target: "p99 <= 300ms, >= 10x", key: "handoff-p99", value: value(0.99)},
		{what: "  of which Complete -> gate lifted (sequencer) p50", ours: sec(percentile(oursRel, 0.5)), target: "-"},
		{what: "  of which Complete -> gate lifted (sequencer) p99", ours: sec(percentile(oursRel, 0.99)), target: "-", key: "lifted-p99", value: percentile(oursRel, 0.99).Seconds()},
		{what: "hand-off max", ours: sec(percentile(oursH, 1)), baseline: sec(percentile(upH, 1)), ratio: ratio(1), target: "-"},
		{what: "hand-offs not seen (stage never ran)", ours: fmt.Sprint(oursMissing), baseline: fmt.Sprint(upMissing), target: "0", key: "handoff-missing", value: float64(oursMissing)},
		{what: fmt.Sprintf("all %d JobSets finished after", jobSets), ours: finished[ours].Round(time.Millisecond).String(), baseline: finished[upstream].Round(time.Millisecond).String(), target: "-"},
		{what: "pods existing before their stage may run, per JobSet", ours: fmt.Sprintf("%.1f", float64(oursEarly)/float64(jobSets)), baseline: fmt.Sprintf("%.1f", float64(upEarly)/float64(jobSets)), target: "-"},
	}
	for _, m := range []struct{ what, metric, match string }{
		{"sequencer workqueue wait", "workqueue_queue_duration_seconds", `name="sequencer"`},
		{"sequencer reconcile", "jobset_addons_sequencer_reconcile_duration_seconds", `result="success"`},
	} {
		h, err := addonHistogram(ctx, tb, "sequencer", m.metric, m.match)
		if err != nil {
			b.Fatal(err)
		}
		rows = append(rows, row{what: fmt.Sprintf("%s p50 / p99 (%.0f)", m.what, h.count), ours: "<= " + fmtSeconds(h.quantile(0.5)) + " / " + fmtSeconds(h.quantile(0.99)), target: "-"})
	}
	for _, kind := range []string{"Jobs", "Pods", "Services", "Events"} {
		rows = append(rows, row{what: "apiserver objects per JobSet: " + kind, ours: fmt.Sprintf("%.1f", oursObjs[kind]), baseline: fmt.Sprintf("%.1f", upObjs[kind]), target: "-"})
	}
	return rows
}
