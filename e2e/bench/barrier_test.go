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

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/jobset-addons/jobset-addons/e2e/testbed"
	"github.com/jobset-addons/jobset-addons/pkg/addon/addontest"
	"github.com/jobset-addons/jobset-addons/pkg/addon/jobsets"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// The sequencer's own defaults (controllers/sequencer/main.go), which the bare loop gets too.
const barrierQPS, barrierBurst, barrierWorkers = 200, 400, 32

// barrierPods is how many pods wait at the benchmark's barrier: $BENCH_BARRIER_PODS, 400 by
// default (the testbed's 4 nodes hold 440 pods); 10,000 needs TESTBED_NODES=92 or more.
func barrierPods() int {
	if n, err := strconv.Atoi(os.Getenv("BENCH_BARRIER_PODS")); err == nil && n > 0 {
		return n
	}
	return 400
}

// BenchmarkStartBarrier (the scenario barrier of SEQUENCER_BENCH) opens a start barrier of
// barrierPods()+1 pods (the last one held back until all others wait), and compares the time
// from the last pod waiting to the last pod told open (both seen by one pod watch) with a bare
// loop making the same writes (one merge patch of a pod annotation per pod) with the sequencer's
// QPS, burst and workers, seen by the same watch, in the same run. It also counts the
// sequencer's API requests from the last pod waiting on (audit log), against the minimum: one
// patch per pod.
func BenchmarkStartBarrier(b *testing.B) {
	runAddonBench(b, "sequencer", []scenario{{"barrier", func(e benchEnv) []row { return barrierVersusBare(e.ctx, e.b, e.c, e.cs, e.tb) }}})
}

// podWatch follows the pods of one namespace: when the last of them was first seen waiting at
// the barrier, and when the last of them was first seen with an annotation value.
type podWatch struct {
	mu                 sync.Mutex
	waiting            map[types.UID]time.Time
	valued             map[types.UID]time.Time
	key, value         string
	stop               chan struct{}
	lastWait, lastSeen time.Time
}

func watchPods(b *testing.B, cs kubernetes.Interface, ns string) *podWatch {
	w := &podWatch{waiting: map[types.UID]time.Time{}, valued: map[types.UID]time.Time{}, stop: make(chan struct{})}
	f := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(ns))
	seen := func(obj any) {
		p, ok := obj.(*corev1.Pod)
		if !ok {
			return
		}
		now := time.Now()
		w.mu.Lock()
		defer w.mu.Unlock()
		if _, ok := jobsets.AtBarrier(p); ok {
			if _, had := w.waiting[p.UID]; !had {
				w.waiting[p.UID] = now
				w.lastWait = now
			}
		}
		if w.key != "" && p.Annotations[w.key] == w.value {
			if _, had := w.valued[p.UID]; !had {
				w.valued[p.UID] = now
				w.lastSeen = now
			}
		}
	}
	if _, err := f.Core().V1().Pods().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: seen, UpdateFunc: func(_, obj any) { seen(obj) },
	}); err != nil {
		b.Fatal(err)
	}
	f.Start(w.stop)
	f.WaitForCacheSync(w.stop)
	return w
}

// expect starts counting the pods whose annotation key has value.
func (w *podWatch) expect(key, value string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.key, w.value, w.valued, w.lastSeen = key, value, map[types.UID]time.Time{}, time.Time{}
}

func (w *podWatch) counts() (waiting, valued int, lastWait, lastSeen time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.waiting), len(w.valued), w.lastWait, w.lastSeen
}

func waitFor(ctx context.Context, b *testing.B, timeout time.Duration, what string, ok func() bool) {
	deadline := time.Now().Add(timeout)
	for !ok() {
		if time.Now().After(deadline) || ctx.Err() != nil {
			b.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func barrierVersusBare(ctx context.Context, b *testing.B, c client.Client, cs kubernetes.Interface, tb testbed.Config) []row {
	n := barrierPods()
	total := n + 1
	var ours, bare []time.Duration
	var perPod, podPatches []float64
	for round := range benchRounds() {
		ns := namespace(ctx, b, c, fmt.Sprintf("bench-barrier-%d", round))
		w := watchPods(b, cs, ns)
		perJob := int32(min(n, 50))
		js := addontest.JobSet(ns, "barrier").Annotation(contract.StartBarrierAnnotationKey, string(contract.StartBarrierJobSet)).
			Annotation(contract.StartBarrierTimeoutAnnotationKey, "30m").ReplicatedJobs(
			addontest.ReplicatedJob("w").Replicas(int32(n)/perJob).Pods(perJob).CompletionMode(nil).PodAnnotation(testbed.DelayAnnotationKey, "1h"),
			addontest.ReplicatedJob("late").Pods(1).PodAnnotation(testbed.DelayAnnotationKey, "1h"),
		).Obj()
		if int32(n)%perJob != 0 {
			b.Fatalf("BENCH_BARRIER_PODS=%d: want a multiple of %d", n, perJob)
		}
		js.Spec.ReplicatedJobs[1].Template.Spec.Template.Spec.NodeSelector = map[string]string{"bench-barrier": ns}
		if err := c.Create(ctx, js); err != nil {
			b.Fatal(err)
		}
		w.expect(contract.StartBarrierStateAnnotationKey, contract.StartBarrierOpen)
		waitFor(ctx, b, 10*time.Minute, fmt.Sprintf("%d pods at the barrier", n), func() bool { waiting, _, _, _ := w.counts(); return waiting >= n })
		node := "kwok-node-0"
		since := time.Now()
		label := func(v string) {
			patch := fmt.Appendf(nil, `{"metadata":{"labels":{"bench-barrier":%s}}}`, v)
			if _, err := cs.CoreV1().Nodes().Patch(ctx, node, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
				b.Fatal(err)
			}
		}
		label(strconv.Quote(ns))
		waitFor(ctx, b, 10*time.Minute, "every pod told open", func() bool { _, valued, _, _ := w.counts(); return valued >= total })
		_, _, lastWait, lastOpen := w.counts()
		label("null")
		ours = append(ours, lastOpen.Sub(lastWait))
		time.Sleep(2 * time.Second) // the audit log is written asynchronously
		reqs, err := testbed.AuditRequests(tb, since)
		if err != nil {
			b.Fatal(err)
		}
		all, patches := 0, 0
		for _, r := range reqs {
			if addonOf(r) != "sequencer" || r.At.After(lastOpen) {
				continue
			}
			all++
			if r.Verb == "patch" && r.Resource == "pods" && r.Namespace == ns {
				patches++
			}
		}
		perPod = append(perPod, float64(all)/float64(total))
		podPatches = append(podPatches, float64(patches)/float64(total))

		// The bare loop: the same writes, one merge patch of one pod annotation each, to the same
		// pods, with the sequencer's ServiceAccount, QPS, burst and workers.
		var pods corev1.PodList
		if err := c.List(ctx, &pods, client.InNamespace(ns)); err != nil {
			b.Fatal(err)
		}
		client := bareClient(b, tb, "sequencer", barrierQPS, barrierBurst)
		value := "bare-" + strconv.Itoa(round)
		w.expect("bench/bare", value)
		patch := fmt.Appendf(nil, `{"metadata":{"annotations":{"bench/bare":%q}}}`, value)
		start := time.Now()
		if err := createParallel(len(pods.Items), barrierWorkers, func(i int) error {
			_, err := client.CoreV1().Pods(ns).Patch(ctx, pods.Items[i].Name, types.MergePatchType, patch, metav1.PatchOptions{})
			return err
		}); err != nil {
			b.Fatal(err)
		}
		waitFor(ctx, b, 10*time.Minute, "every bare patch seen", func() bool { _, valued, _, _ := w.counts(); return valued >= len(pods.Items) })
		_, _, _, lastBare := w.counts()
		bare = append(bare, lastBare.Sub(start))
		// Each round as it ends: a long run that fails later keeps what it measured.
		fmt.Printf("start barrier round %d: %d pods, last waiting -> last told %v, bare %v, %.3f requests per pod (%.3f pod patches)\n",
			round, total, ours[round].Round(time.Millisecond), bare[round].Round(time.Millisecond), perPod[round], podPatches[round])
		close(w.stop)
		if err := c.Delete(ctx, js); err != nil {
			b.Fatal(err)
		}
	}
	minMax := func(v []float64) string {
		return fmt.Sprintf("%.3f (%.3f-%.3f)", median64(v), slices.Min(v), slices.Max(v))
	}
	return []row{
		{
			what:     fmt.Sprintf("barrier of %d pods: last waiting -> last told, QPS %d", total, barrierQPS),
			ours:     median(ours).Round(time.Millisecond).String(),
			baseline: median(bare).Round(time.Millisecond).String() + " bare",
			ratio:    fmt.Sprintf("%.2f", median(bare).Seconds()/median(ours).Seconds()),
			target:   "ratio >= 0.9; rounds: " + roundRatios(ours, bare),
		},
		{what: "  sequencer requests per pod, from the last pod waiting", ours: minMax(perPod), baseline: "1 minimum", ratio: "-", target: "median (min-max)"},
		{what: "  of which pod patches per pod", ours: minMax(podPatches), baseline: "1 minimum", ratio: "-", target: "median (min-max)"},
	}
}

func median64(v []float64) float64 {
	s := slices.Sorted(slices.Values(v))
	return s[len(s)/2]
}
