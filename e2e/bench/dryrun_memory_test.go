package bench

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/e2e/testbed"
	"github.com/jobset-addons/jobset-addons/pkg/addon/addontest"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// dryRunJobSets is how many distinct JobSets BenchmarkDryRunMemory sends each add-on:
// $BENCH_DRYRUN_JOBSETS, 5,000 by default.
func dryRunJobSets() int {
	if n, err := strconv.Atoi(os.Getenv("BENCH_DRYRUN_JOBSETS")); err == nil && n > 0 {
		return n
	}
	return 5000
}

// dryRunClients is how many dry runs are sent at once.
const dryRunClients = 8

// dryRunPad is the size of the text that makes each JobSet's template distinct and large.
const dryRunPad = 200 << 10

// BenchmarkDryRunMemory sends each add-on's webhooks, one add-on at a time, dryRunJobSets()
// JobSets of ~200 KB, each with a template of its own where the add-on reads it (a PVC template,
// a claim template, a pod template), as `kubectl create --dry-run=server` would (dryRunClients at once),
// and prints the add-on's resident memory (VmRSS) before, at its peak (sampled every 100 ms) and
// after (10 s later): what a stream of distinct large templates leaves in a webhook.
// $BENCH_DRYRUN_ADDONS (comma-separated) runs only those add-ons; "together" runs the four at
// once instead, in one pass of ~200 KB JobSets that each use all four add-ons (a template of
// its own for each: PVC, claim, pod), so that every dry run goes through the four webhooks and
// each of them dry-runs its objects (sideEffects None: the API server calls them on a dry-run
// request). Not part of make test nor of make bench:
// `make bench ADDON=dryrun-memory [SCENARIO=volumeclaims,...|together]`.
func BenchmarkDryRunMemory(b *testing.B) {
	if os.Getenv("BENCH_DRYRUN_MEMORY") == "" {
		b.Skip("BENCH_DRYRUN_MEMORY is not set: run through `make bench ADDON=dryrun-memory`")
	}
	ctx := context.Background()
	c, _, tb := clients(b)
	ns := namespace(ctx, b, c, "bench-dryrun")
	only := os.Getenv("BENCH_DRYRUN_ADDONS")
	fmt.Printf("\n%-15s %8s %12s %12s %12s %12s %8s %10s\n", "add-on", "JobSets", "RSS before", "peak", "after", "after-before", "took", "per second")
	if only == "together" {
		dryRunAddons(ctx, b, c, tb, testbed.Addons, ns, func(i int) *jobsetv1alpha2.JobSet { return dryRunJobSet(testbed.Addons, ns, i) })
		return
	}
	for _, name := range testbed.Addons {
		if only != "" && !slices.Contains(strings.Split(only, ","), name) {
			continue
		}
		dryRunAddons(ctx, b, c, tb, []string{name}, ns, func(i int) *jobsetv1alpha2.JobSet { return dryRunJobSet([]string{name}, ns, i) })
	}
}

// dryRunAddons starts the add-ons names, sends them the JobSets made by jobSet, prints a row
// per add-on, and stops them.
func dryRunAddons(ctx context.Context, b *testing.B, c client.Client, tb testbed.Config, names []string, ns string, jobSet func(int) *jobsetv1alpha2.JobSet) {
	for _, name := range names {
		// The scale benchmark's Lease: at the chart's, a starved API server answered the
		// renewals late and the add-ons exited mid-run (leader election lost).
		if err := testbed.StartAddon(ctx, tb, name, nil, scaleAddonArgs()...); err != nil {
			b.Fatal(err)
		}
	}
	rows, took := dryRunMemory(ctx, b, c, tb, names, jobSet)
	n := dryRunJobSets()
	for i, name := range names {
		r := rows[i]
		fmt.Printf("%-15s %8d %12s %12s %12s %12s %8s %10.1f\n", name, n, mib(r.before), mib(r.peak), mib(r.after), mib(r.after-r.before),
			took.Round(time.Second), float64(n)/took.Seconds())
	}
	for _, name := range names {
		if err := testbed.StopAddon(ctx, tb, name); err != nil {
			b.Fatal(err)
		}
	}
}

// rssSamples are one add-on's resident memory, in KiB.
type rssSamples struct{ before, peak, after int }

// dryRunMemory sends the JobSets as dry runs, dryRunClients at once, and samples the RSS of the add-ons
// names: before, at the peak (every 100 ms) and 10 s after the last.
func dryRunMemory(ctx context.Context, b *testing.B, c client.Client, tb testbed.Config, names []string, jobSet func(int) *jobsetv1alpha2.JobSet) ([]rssSamples, time.Duration) {
	rss := func(name string) int {
		kib, err := testbed.ProcessRSS(tb, name)
		if err != nil {
			b.Fatal(err)
		}
		return kib
	}
	time.Sleep(5 * time.Second) // settled after its start
	rows := make([]rssSamples, len(names))
	for i, name := range names {
		rows[i].before = rss(name)
		rows[i].peak = rows[i].before
	}
	var mu sync.Mutex
	var sent atomic.Int64
	stop := make(chan struct{})
	done := make(chan struct{})
	start := time.Now()
	go func() {
		defer close(done)
		for tick := 1; ; tick++ {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
			now := make([]string, len(names))
			for i, name := range names {
				if kib, err := testbed.ProcessRSS(tb, name); err == nil {
					mu.Lock()
					rows[i].peak = max(rows[i].peak, kib)
					mu.Unlock()
					now[i] = name + " " + mib(kib)
				}
			}
			if tick%600 == 0 { // a minute: where a long run stands
				fmt.Printf("  %v: %d dry runs, RSS %s\n", time.Since(start).Round(time.Second), sent.Load(), strings.Join(now, ", "))
			}
		}
	}()
	var refused sync.Map
	if err := createParallel(dryRunJobSets(), dryRunClients, func(i int) error {
		if err := c.Create(ctx, jobSet(i), client.DryRunAll); err != nil {
			refused.Store(i, err)
		}
		sent.Add(1)
		return nil
	}); err != nil {
		b.Fatal(err)
	}
	took := time.Since(start)
	n := 0
	refused.Range(func(k, v any) bool {
		if n == 0 {
			b.Logf("%v: JobSet %v refused: %v", names, k, v)
		}
		n++
		return true
	})
	if n > 0 {
		b.Fatalf("%v: %d of %d dry runs refused: each must reach the add-ons' webhooks and be admitted", names, n, dryRunJobSets())
	}
	time.Sleep(10 * time.Second)
	close(stop)
	<-done
	for i, name := range names {
		rows[i].after = rss(name)
	}
	return rows, took
}

// dryRunJobSet is JobSet i for the add-ons names, ~200 KB: each add-on's template distinct from
// every other JobSet's, the 200 KB shared between the templates (a PVC template, a claim
// template, and a pod template read by both the sequencer and podgroups).
func dryRunJobSet(names []string, ns string, i int) *jobsetv1alpha2.JobSet {
	templates := len(names)
	if slices.Contains(names, "sequencer") && slices.Contains(names, "podgroups") {
		templates--
	}
	pad := fmt.Sprintf("%06d", i) + strings.Repeat("x", dryRunPad/templates)
	rj := addontest.ReplicatedJob("w").Pods(1)
	prefix := "all"
	if len(names) == 1 {
		prefix = names[0]
	}
	js := addontest.JobSet(ns, fmt.Sprintf("dryrun-%s-%d", prefix, i))
	for _, name := range names {
		switch name {
		case "volumeclaims":
			rj.Mount("data")
			js.Annotation(contract.PoliciesAnnotationKey, fmt.Sprintf(`[{templates: [{metadata: {name: data, annotations: {pad: %q}}, spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}}]}]`, pad))
		case "resourceclaims":
			rj.JobAnnotation(contract.TemplatesAnnotationKey, fmt.Sprintf(`[{metadata: {name: dev, annotations: {pad: %q}}, spec: {devices: {requests: [{name: dev, exactly: {deviceClassName: bench.jobset-addons.io}}]}}}]`, pad))
		case "sequencer":
			js.Annotation(contract.StartBarrierAnnotationKey, string(contract.StartBarrierJobSet))
			rj.PodAnnotation("pad", pad)
		case "podgroups":
			js.Annotation(contract.SchedulerAnnotationKey, string(contract.SchedulerKubernetes))
			rj.PodAnnotation("pad", pad)
		}
	}
	return js.ReplicatedJobs(rj).Obj()
}
