package bench

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/e2e/framework"
	"github.com/jobset-addons/jobset-addons/e2e/testbed"
	"github.com/jobset-addons/jobset-addons/pkg/addon/addontest"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// The volumeclaims controller's own defaults (controllers/volumeclaims/main.go), which the
// bare client below gets too.
const vcQPS, vcBurst = 200, 300

// row is a line of a table. A ratio that bench-smoke checks has its value and a key naming it.
type row struct {
	what, ours, baseline, ratio, target string
	key                                 string
	value                               float64
}

func printTable(title string, rows []row) {
	fmt.Printf("\n%-58s %14s %14s %8s  %s\n", title, "ours", "baseline", "ratio", "target")
	for _, r := range rows {
		fmt.Printf("%-58s %14s %14s %8s  %s\n", r.what, r.ours, r.baseline, r.ratio, r.target)
	}
	fmt.Println()
}

func clients(b *testing.B) (client.Client, kubernetes.Interface, testbed.Config) {
	b.Helper()
	kc := os.Getenv("KUBECONFIG")
	if kc == "" {
		b.Fatal("KUBECONFIG is not set: run through `make bench` or `make bench ADDON=volumeclaims`")
	}
	rc, err := clientcmd.BuildConfigFromFlags("", kc)
	if err != nil {
		b.Fatal(err)
	}
	rc.QPS, rc.Burst = -1, 0 // unthrottled: measure the apiserver, not client-go's limiter
	c, err := client.New(rc, client.Options{Scheme: framework.Scheme})
	if err != nil {
		b.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		b.Fatal(err)
	}
	tb, err := testbed.DefaultConfig()
	if err != nil {
		b.Fatal(err)
	}
	return c, cs, tb
}

func namespace(ctx context.Context, b *testing.B, c client.Client, prefix string) string {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-"}}
	if err := c.Create(ctx, ns); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = c.Delete(context.Background(), ns) })
	return ns.Name
}

func pvcSpec() corev1.PersistentVolumeClaimSpec {
	return corev1.PersistentVolumeClaimSpec{
		AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
	}
}

// suspendedJobSet is a suspended JobSet (its Jobs make no pods) of one ReplicatedJob whose pods
// mount the volume data.
func suspendedJobSet(ns, name string, replicas, completions int32) *jobsetv1alpha2.JobSet {
	return addontest.JobSet(ns, name).Suspend(true).ReplicatedJobs(
		addontest.ReplicatedJob("w").Replicas(replicas).Pods(completions).CompletionMode(nil).BackoffLimit(nil).Mount("data"),
	).Obj()
}

var pvcList = corev1.SchemeGroupVersion.WithKind("PersistentVolumeClaimList")

// countObjects counts the objects of the list kind in ns matching labels.
func countObjects(ctx context.Context, c client.Client, list schema.GroupVersionKind, ns string, labels client.MatchingLabels) int {
	var objs metav1.PartialObjectMetadataList
	objs.SetGroupVersionKind(list)
	if err := c.List(ctx, &objs, client.InNamespace(ns), labels); err != nil {
		return -1
	}
	return len(objs.Items)
}

// timeUntil polls every 50ms from start until n objects of the list kind in ns match labels.
func timeUntil(ctx context.Context, b *testing.B, c client.Client, start time.Time, list schema.GroupVersionKind, ns string, labels client.MatchingLabels, n int) time.Duration {
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
		return countObjects(ctx, c, list, ns, labels) >= n, nil
	})
	if err != nil {
		b.Fatalf("waiting for %d %s in %s: %v (have %d)", n, list.Kind, ns, err, countObjects(ctx, c, list, ns, labels))
	}
	return time.Since(start)
}

func createParallel(n, workers int, create func(i int) error) error {
	var wg sync.WaitGroup
	errs := make(chan error, n)
	next := make(chan int)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := create(i); err != nil {
					errs <- err
				}
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	close(errs)
	return <-errs
}

// BenchmarkVolumeClaims runs the volumeclaims controller on the testbed and prints its table.
// VOLUMECLAIMS_BENCH=perpod,shared,latency,admission,rss picks some scenarios. Latency and memory come
// first, on a quiet testbed and a quiet controller: the PVC scenarios leave provisioning work
// and garbage behind. The 20,000 gated pods stay, inert, for the rest.
func BenchmarkVolumeClaims(b *testing.B) {
	runAddonBench(b, "volumeclaims", []scenario{
		{"latency", func(e benchEnv) []row { return podWebhookLatency(e.ctx, e.b, e.c, e.cs, e.tb) }},
		{"admission", volumeClaimsAdmission},
		{"rss", func(e benchEnv) []row { return []row{rssWithUnrelatedPods(e.ctx, e.b, e.c, e.tb)} }},
		{"perpod", func(e benchEnv) []row { return []row{perPodVersusBare(e.ctx, e.b, e.c, e.tb, 50, 1)} }},
		{"shared", func(e benchEnv) []row { return []row{sharedVersusUpstream(e.ctx, e.b, e.c)} }},
	})
}

// benchEnv is what a scenario runs with.
type benchEnv struct {
	ctx context.Context
	b   *testing.B
	c   client.Client
	cs  kubernetes.Interface
	tb  testbed.Config
}

// scenario is one measurement of an add-on's benchmark, with the rows it prints.
type scenario struct {
	name string
	run  func(benchEnv) []row
}

// scenarioKnobs name, for each add-on, the environment variable whose comma-separated list of
// scenario names picks some of its benchmark's scenarios (make bench ADDON=... SCENARIO=...
// sets it); none, or empty, runs them all.
var scenarioKnobs = map[string]string{
	"volumeclaims":   "VOLUMECLAIMS_BENCH",
	"resourceclaims": "RESOURCECLAIMS_BENCH",
	"sequencer":      "SEQUENCER_BENCH",
	"peers":          "PEERS_BENCH",
	"podgroups":      "PODGROUPS_BENCH",
}

// picked tells whether the scenario name of the add-on's benchmark is to run.
func picked(addon, name string) bool {
	only := os.Getenv(scenarioKnobs[addon])
	return only == "" || slices.Contains(strings.Split(only, ","), name)
}

// runAddonBench runs the add-on on the testbed and the scenarios once each, whatever b.N
// (each is a measurement of its own), in order, and prints their table. The add-on's knob of
// scenarioKnobs picks some; with none of these picked, the benchmark is skipped.
func runAddonBench(b *testing.B, addon string, scenarios []scenario) {
	if !slices.ContainsFunc(scenarios, func(s scenario) bool { return picked(addon, s.name) }) {
		b.Skipf("%s=%q picks none of its scenarios", scenarioKnobs[addon], os.Getenv(scenarioKnobs[addon]))
	}
	ctx := context.Background()
	c, cs, tb := clients(b)
	if err := testbed.StartAddon(ctx, tb, addon, nil, addonArgs()...); err != nil {
		b.Fatal(err)
	}
	defer func() { _ = testbed.StopAddon(ctx, tb, addon) }()
	var rows []row
	for _, s := range scenarios {
		if picked(addon, s.name) {
			before := namespaceNames(ctx, b, c)
			rows = append(rows, s.run(benchEnv{ctx: ctx, b: b, c: c, cs: cs, tb: tb})...)
			// The scenario's namespaces are gone before the next one starts: its cold starts
			// list the next scenario's objects only, and no namespace deletion loads its windows.
			deleted := map[string]bool{}
			deleteNamespacesSince(ctx, b, c, before, deleted)
			waitNamespacesGone(ctx, b, c, deleted)
		}
	}
	printTable(addon, rows)
}

// bareClient is a clientset with the add-on's QPS and burst: the baseline of a bare loop. It is
// the testbed's admin, or, with as, the ServiceAccount of the add-on as.
func bareClient(b *testing.B, tb testbed.Config, as string, qps float32, burst int) kubernetes.Interface {
	rc, err := tb.RESTConfig()
	if as != "" {
		rc, err = clientcmd.BuildConfigFromFlags("", filepath.Join(tb.WorkDir, "addons", as, "kubeconfig"))
	}
	if err != nil {
		b.Fatal(err)
	}
	rc.QPS, rc.Burst = qps, burst
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		b.Fatal(err)
	}
	return cs
}

// perPodVersusBare: jobSets JobSets x 4 replicas x 10 completions (50: 2,000 per-pod PVCs),
// against a bare client-go loop creating as many PVCs with the controller's QPS and burst;
// rounds of each, interleaved (the bare loop first in odd rounds, ours first in even ones), and
// their medians compared: one round of each under load moved the ratio from 0.38 to 1.76.
func perPodVersusBare(ctx context.Context, b *testing.B, c client.Client, tb testbed.Config, jobSets, rounds int) row {
	const replicas, completions = 4, 10
	total := jobSets * replicas * completions
	var bareTimes, ourTimes []time.Duration
	for r := range max(rounds, 1) {
		bareRound := func() { bareTimes = append(bareTimes, barePVCs(ctx, b, c, tb, total)) }
		oursRound := func() { ourTimes = append(ourTimes, perPodPVCs(ctx, b, c, jobSets, replicas, completions)) }
		if r%2 == 0 {
			bareRound()
			oursRound()
		} else {
			oursRound()
			bareRound()
		}
	}
	ours, bare := median(ourTimes), median(bareTimes)
	lo, hi := math.Inf(1), math.Inf(-1)
	for i := range ourTimes {
		r := bareTimes[i].Seconds() / ourTimes[i].Seconds()
		lo, hi = math.Min(lo, r), math.Max(hi, r)
	}
	return row{
		what: fmt.Sprintf("%d per-pod PVCs exist (%d JobSets x %d x %d), QPS %d (median of %d, interleaved; rounds' ratios %.2f-%.2f)",
			total, jobSets, replicas, completions, vcQPS, len(ourTimes), lo, hi),
		ours:     ours.Round(time.Millisecond).String(),
		baseline: bare.Round(time.Millisecond).String() + " bare",
		ratio:    fmt.Sprintf("%.2f", bare.Seconds()/ours.Seconds()),
		target:   "ratio >= 0.9, ours < 15s",
		key:      "rate", value: bare.Seconds() / ours.Seconds(),
	}
}

// barePVCs is how long a bare client-go loop with the controller's QPS and burst takes to
// create total PVCs, in a namespace of their own, until the cache-less list shows them all.
func barePVCs(ctx context.Context, b *testing.B, c client.Client, tb testbed.Config, total int) time.Duration {
	ns := namespace(ctx, b, c, "bench-bare")
	bare := bareClient(b, tb, "", vcQPS, vcBurst)
	start := time.Now()
	if err := createParallel(total, 16, func(i int) error {
		pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("bare-%d", i), Labels: map[string]string{"bench": "bare"}}, Spec: pvcSpec()}
		_, err := bare.CoreV1().PersistentVolumeClaims(ns).Create(ctx, pvc, metav1.CreateOptions{})
		return err
	}); err != nil {
		b.Fatal(err)
	}
	return timeUntil(ctx, b, c, start, pvcList, ns, client.MatchingLabels{"bench": "bare"}, total)
}

// perPodPVCs is how long volumeclaims takes to make the per-pod PVCs of jobSets suspended
// JobSets of replicas x completions pods, in a namespace of their own.
func perPodPVCs(ctx context.Context, b *testing.B, c client.Client, jobSets, replicas, completions int) time.Duration {
	ns := namespace(ctx, b, c, "bench-perpod")
	policies := `[{targetReplicatedJobs: [w], templates: [{metadata: {name: data}, spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}}]}]`
	start := time.Now()
	if err := createParallel(jobSets, 8, func(i int) error {
		js := suspendedJobSet(ns, fmt.Sprintf("pp-%d", i), int32(replicas), int32(completions))
		js.Annotations = map[string]string{contract.PoliciesAnnotationKey: policies}
		return c.Create(ctx, js)
	}); err != nil {
		b.Fatal(err)
	}
	return timeUntil(ctx, b, c, start, pvcList, ns, client.MatchingLabels{contract.ManagedByLabelKey: contract.VolumeClaimsManagedByValue}, jobSets*replicas*completions)
}

// sharedVersusUpstream: 200 JobSets with one shared PVC each, ours against upstream JobSet's
// own spec.volumeClaimPolicies on identical JobSets.
func sharedVersusUpstream(ctx context.Context, b *testing.B, c client.Client) row {
	const n = 200
	run := func(prefix string, mk func(js *jobsetv1alpha2.JobSet), labels client.MatchingLabels) time.Duration {
		ns := namespace(ctx, b, c, prefix)
		start := time.Now()
		if err := createParallel(n, 8, func(i int) error {
			js := suspendedJobSet(ns, fmt.Sprintf("s-%d", i), 1, 1)
			mk(js)
			return c.Create(ctx, js)
		}); err != nil {
			b.Fatal(err)
		}
		return timeUntil(ctx, b, c, start, pvcList, ns, labels, n)
	}
	ours := run("bench-shared-ours", func(js *jobsetv1alpha2.JobSet) {
		js.Annotations = map[string]string{contract.PoliciesAnnotationKey: `[{templates: [{metadata: {name: data}, spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}}]}]`}
	}, client.MatchingLabels{contract.ManagedByLabelKey: contract.VolumeClaimsManagedByValue})
	upstream := run("bench-shared-upstream", func(js *jobsetv1alpha2.JobSet) {
		js.Spec.VolumeClaimPolicies = []jobsetv1alpha2.VolumeClaimPolicy{{
			Templates: []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data"}, Spec: pvcSpec()}},
		}}
	}, nil)
	return row{
		what:     fmt.Sprintf("%d JobSets with one shared PVC each: all PVCs exist", n),
		ours:     ours.Round(time.Millisecond).String(),
		baseline: upstream.Round(time.Millisecond).String() + " upstream",
		ratio:    fmt.Sprintf("%.2f", ours.Seconds()/upstream.Seconds()),
		target:   "ratio <= 0.25",
	}
}

// podWebhookLatency creates pods that the Pod webhook mutates, at 100 pods/s for 10 s, and
// reads the webhook's admission latency from the apiserver's histogram.
func podWebhookLatency(ctx context.Context, b *testing.B, c client.Client, cs kubernetes.Interface, tb testbed.Config) []row {
	ns := namespace(ctx, b, c, "bench-podhook")
	return webhookLatency(ctx, b, cs, tb, webhookLoad{
		addon: "volumeclaims", webhook: "mpod.volumeclaims.jobset-addons.io", path: "/mutate--v1-pod", kind: "Pod",
		group: "", version: "v1", resource: "pods",
		create: func(i int, null bool) error {
			labels := map[string]string{
				contract.VolumeClaimsPerPodLabelKey: contract.EnabledValue, contract.JobSetNameLabelKey: "bench",
				contract.ReplicatedJobNameLabelKey: "w", contract.JobIndexLabelKey: strconv.Itoa(i / 10),
			}
			name := fmt.Sprintf("p-%d", i)
			if null {
				// The same pod, out of the Pod webhook's scope: JobSet's own Pod webhooks
				// and every watch of JobSet pods take it as they take ours.
				delete(labels, contract.VolumeClaimsPerPodLabelKey)
				labels[nullLabel] = "true"
				name = fmt.Sprintf("null-%d", i)
			}
			return c.Create(ctx, &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{
					Namespace: ns, Name: name, Labels: labels,
					Annotations: map[string]string{
						contract.VolumeClaimsPerPodVolumesAnnotationKey: "data", batchv1.JobCompletionIndexAnnotation: strconv.Itoa(i % 10),
					},
				},
				// Gated: the scheduler leaves them alone; only admission is measured.
				Spec: corev1.PodSpec{
					SchedulingGates: []corev1.PodSchedulingGate{{Name: "bench.jobset-addons.io/hold"}},
					Containers:      []corev1.Container{{Name: "main", Image: "busybox"}},
				},
			})
		},
	})
}

// webhookLoad is a steady load on one webhook of an add-on: create(i, null) makes the i-th
// object that the webhook admits, or, with null, the same object for the null webhook instead.
type webhookLoad struct {
	addon, webhook, path, kind string
	group, version, resource   string
	create                     func(i int, null bool) error
}

// webhookLatency runs load at 100 objects/s for 10 s on the add-on's webhook and 10 s on the null
// webhook (nullWebhook), 5 s at a time, and reads both latencies from the apiserver's histogram, and the
// handler's time from the add-on's own.
func webhookLatency(ctx context.Context, b *testing.B, cs kubernetes.Interface, tb testbed.Config, load webhookLoad) []row {
	nullWebhook(ctx, b, cs, tb, load.group, load.version, load.resource)
	// In the order null, ours, ours, null, half the load each time: the objects pile up over
	// the run (the apiserver, its watchers and their caches hold more), and this order gives
	// both the same pile on average.
	var null, h histogram
	for block, isNull := range []bool{true, false, false, true} {
		name := load.webhook
		if isNull {
			name = nullWebhookName
		}
		got := steadyLoad(ctx, b, cs, name, load.kind, func(i int) error { return load.create(block*loadRate*loadSeconds/2+i, isNull) })
		if isNull {
			null = null.plus(got)
		} else {
			h = h.plus(got)
		}
	}
	serverSide, err := handlerHistogram(ctx, tb, load.addon, load.path)
	if err != nil {
		b.Fatal(err)
	}
	within := func(h histogram) string { return fmt.Sprintf("%.1f%%", 100*h.counts[0.005]/h.count) }
	return []row{
		{what: fmt.Sprintf("  handler time p99, in the controller (%.0f requests)", serverSide.count), ours: "<= " + fmtSeconds(serverSide.quantile(0.99)), target: "-"},
		{what: load.kind + " webhook calls within 5ms, apiserver side", ours: within(h), baseline: within(null) + " null", target: "-"},
		{what: fmt.Sprintf("%s webhook latency p50 (%.0f at %d/s)", load.kind, h.count, loadRate), ours: "<= " + fmtSeconds(h.quantile(0.5)), baseline: "<= " + fmtSeconds(null.quantile(0.5)) + " null", target: "-"},
		{what: fmt.Sprintf("%s webhook latency p99 (%.0f at %d/s)", load.kind, h.count, loadRate), ours: "<= " + fmtSeconds(h.quantile(0.99)), baseline: "<= " + fmtSeconds(null.quantile(0.99)) + " null", target: "p99 <= 5ms"},
	}
}

const loadRate, loadSeconds = 100, 10

// steadyLoad calls create loadRate times a second for loadSeconds/2 and returns the apiserver's
// latency histogram of the webhook over that time.
func steadyLoad(ctx context.Context, b *testing.B, cs kubernetes.Interface, webhook, kind string, create func(i int) error) histogram {
	before, err := webhookHistogram(ctx, cs, webhook)
	if err != nil {
		b.Fatal(err)
	}
	tick := time.NewTicker(time.Second / loadRate)
	defer tick.Stop()
	var wg sync.WaitGroup
	var failed sync.Map
	for i := range loadRate * loadSeconds / 2 {
		<-tick.C
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := create(i); err != nil {
				failed.Store(i, err)
			}
		}()
	}
	wg.Wait()
	failed.Range(func(k, v any) bool { b.Fatalf("%s %v: %v", kind, k, v); return false })
	after, err := webhookHistogram(ctx, cs, webhook)
	if err != nil {
		b.Fatal(err)
	}
	return after.minus(before)
}

func fmtSeconds(s float64) string {
	if math.IsInf(s, 1) {
		return "+Inf"
	}
	return (time.Duration(s * float64(time.Second))).String()
}

// histogram is a Prometheus histogram: cumulative counts by upper bound.
type histogram struct {
	bounds []float64
	counts map[float64]float64
	count  float64
	sum    float64
}

// mean of the observations (their sum over their count).
func (h histogram) mean() float64 {
	if h.count == 0 {
		return 0
	}
	return h.sum / h.count
}

// plus adds o to h; the zero histogram is the identity.
func (h histogram) plus(o histogram) histogram {
	if h.counts == nil {
		return o
	}
	out := histogram{bounds: h.bounds, counts: map[float64]float64{}, count: h.count + o.count, sum: h.sum + o.sum}
	for _, le := range h.bounds {
		out.counts[le] = h.counts[le] + o.counts[le]
	}
	return out
}

func (h histogram) minus(o histogram) histogram {
	out := histogram{bounds: h.bounds, counts: map[float64]float64{}, count: h.count - o.count, sum: h.sum - o.sum}
	for _, le := range h.bounds {
		out.counts[le] = h.counts[le] - o.counts[le]
	}
	return out
}

// quantile is the upper bound of the bucket holding quantile q: what a histogram can tell.
func (h histogram) quantile(q float64) float64 {
	for _, le := range h.bounds {
		if h.counts[le] >= q*h.count {
			return le
		}
	}
	return math.Inf(1)
}

// webhookHistogram sums apiserver_admission_webhook_admission_duration_seconds of one webhook
// (all operations and outcomes) from the apiserver's /metrics.
func webhookHistogram(ctx context.Context, cs kubernetes.Interface, name string) (histogram, error) {
	raw, err := cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return histogram{}, err
	}
	return parseHistogram(string(raw), "apiserver_admission_webhook_admission_duration_seconds", `name="`+name+`"`), nil
}

// parseHistogram sums the series of metric whose labels contain match, from Prometheus text.
func parseHistogram(text, metric, match string) histogram {
	h := histogram{counts: map[float64]float64{}}
	for _, line := range strings.Split(text, "\n") {
		if !strings.Contains(line, match) {
			continue
		}
		value, err := strconv.ParseFloat(line[strings.LastIndex(line, " ")+1:], 64)
		if err != nil {
			continue
		}
		switch {
		case strings.HasPrefix(line, metric+"_bucket{"):
			i := strings.Index(line, `le="`)
			le, err := strconv.ParseFloat(line[i+4:i+4+strings.Index(line[i+4:], `"`)], 64)
			if err != nil {
				continue
			}
			if _, ok := h.counts[le]; !ok {
				h.bounds = append(h.bounds, le)
			}
			h.counts[le] += value
		case strings.HasPrefix(line, metric+"_count{"):
			h.count += value
		case strings.HasPrefix(line, metric+"_sum{"):
			h.sum += value
		}
	}
	sort.Float64s(h.bounds)
	return h
}

// rssWithUnrelatedPods: the controller's resident memory with 20,000 pods that have nothing to
// do with it, against none: its caches hold only its own objects.
func rssWithUnrelatedPods(ctx context.Context, b *testing.B, c client.Client, tb testbed.Config) row {
	rss := func() int {
		time.Sleep(3 * time.Second) // let the informers settle
		kib, err := testbed.ProcessRSS(tb, "volumeclaims")
		if err != nil {
			b.Fatal(err)
		}
		return kib
	}
	base := rss()
	ns := namespace(ctx, b, c, "bench-unrelated")
	const n = 20000
	if err := createParallel(n, 32, func(i int) error {
		return c.Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("u-%d", i), Labels: map[string]string{"app": "unrelated"}},
			Spec: corev1.PodSpec{
				SchedulingGates: []corev1.PodSchedulingGate{{Name: "bench.jobset-addons.io/hold"}},
				Containers:      []corev1.Container{{Name: "main", Image: "busybox"}},
			},
		})
	}); err != nil {
		b.Fatal(err)
	}
	with := rss()
	return row{
		what:     fmt.Sprintf("controller RSS with %d unrelated pods", n),
		ours:     fmt.Sprintf("%.1f MiB", float64(with)/1024),
		baseline: fmt.Sprintf("%.1f MiB none", float64(base)/1024),
		ratio:    fmt.Sprintf("%+.1f%%", 100*(float64(with)/float64(base)-1)),
		target:   "within 10%",
	}
}

// handlerHistogram reads controller-runtime's webhook latency histogram of the webhook at path
// from the add-on's /metrics: the time spent in the controller, TLS and HTTP included.
func handlerHistogram(ctx context.Context, tb testbed.Config, addon, path string) (histogram, error) {
	return addonHistogram(ctx, tb, addon, "controller_runtime_webhook_latency_seconds", `webhook="`+path+`"`)
}

// addonHistogram reads the series of a histogram whose labels contain match from the /metrics
// of the add-on name running on the testbed.
func addonHistogram(ctx context.Context, tb testbed.Config, name, metric, match string) (histogram, error) {
	url := fmt.Sprintf("http://127.0.0.1:%d/metrics", tb.AddonPorts(name).Metrics)
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return histogram{}, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return histogram{}, err
	}
	return parseHistogram(string(raw), metric, match), nil
}
