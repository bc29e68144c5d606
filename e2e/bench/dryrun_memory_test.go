package bench

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
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

// dryRunPad is the size of the text that makes each JobSet's template distinct and large.
const dryRunPad = 200 << 10

// BenchmarkDryRunMemory sends each add-on's webhooks, one add-on at a time, dryRunJobSets()
// JobSets of ~200 KB, each with a template of its own where the add-on reads it (a PVC template,
// a claim template, a pod template), as `kubectl create --dry-run=server` would (16 at once),
// and prints the add-on's resident memory (VmRSS) before, at its peak (sampled every 100 ms) and
// after (10 s later): what a stream of distinct large templates leaves in a webhook.
// $BENCH_DRYRUN_ADDONS (comma-separated) runs only those add-ons. Not part of make test nor of
// make bench: `make bench ADDON=dryrun-memory [SCENARIO=volumeclaims,...]`.
func BenchmarkDryRunMemory(b *testing.B) {
	if os.Getenv("BENCH_DRYRUN_MEMORY") == "" {
		b.Skip("BENCH_DRYRUN_MEMORY is not set: run through `make bench ADDON=dryrun-memory`")
	}
	ctx := context.Background()
	c, _, tb := clients(b)
	ns := namespace(ctx, b, c, "bench-dryrun")
	fmt.Printf("\n%-15s %8s %12s %12s %12s %12s %8s\n", "add-on", "JobSets", "RSS before", "peak", "after", "after-before", "took")
	for _, name := range testbed.Addons {
		if only := os.Getenv("BENCH_DRYRUN_ADDONS"); only != "" && !slices.Contains(strings.Split(only, ","), name) {
			continue
		}
		if err := testbed.StartAddon(ctx, tb, name, nil, addonArgs()...); err != nil {
			b.Fatal(err)
		}
		before, peak, after, took := dryRunMemory(ctx, b, c, tb, name, ns)
		fmt.Printf("%-15s %8d %12s %12s %12s %12s %8s\n", name, dryRunJobSets(), mib(before), mib(peak), mib(after), mib(after-before), took.Round(time.Second))
		if err := testbed.StopAddon(ctx, tb, name); err != nil {
			b.Fatal(err)
		}
	}
}

// dryRunMemory sends the JobSets to the add-on name and samples its RSS, in KiB.
func dryRunMemory(ctx context.Context, b *testing.B, c client.Client, tb testbed.Config, name, ns string) (before, peak, after int, took time.Duration) {
	rss := func() int {
		kib, err := testbed.ProcessRSS(tb, name)
		if err != nil {
			b.Fatal(err)
		}
		return kib
	}
	time.Sleep(5 * time.Second) // settled after its start
	before = rss()
	peak = before
	var mu sync.Mutex
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
			if kib, err := testbed.ProcessRSS(tb, name); err == nil {
				mu.Lock()
				peak = max(peak, kib)
				mu.Unlock()
			}
		}
	}()
	start := time.Now()
	var refused sync.Map
	if err := createParallel(dryRunJobSets(), 16, func(i int) error {
		js := dryRunJobSet(name, ns, i)
		if err := c.Create(ctx, js, client.DryRunAll); err != nil {
			refused.Store(i, err)
		}
		return nil
	}); err != nil {
		b.Fatal(err)
	}
	took = time.Since(start)
	n := 0
	refused.Range(func(k, v any) bool {
		if n == 0 {
			b.Logf("%s: JobSet %v refused: %v", name, k, v)
		}
		n++
		return true
	})
	if n > 0 {
		b.Fatalf("%s: %d of %d dry runs refused: each must reach the add-on's webhooks and be admitted", name, n, dryRunJobSets())
	}
	time.Sleep(10 * time.Second)
	close(stop)
	<-done
	return before, peak, rss(), took
}

// dryRunJobSet is JobSet i for the add-on name: ~200 KB, its template distinct from every other.
func dryRunJobSet(name, ns string, i int) *jobsetv1alpha2.JobSet {
	pad := fmt.Sprintf("%06d", i) + strings.Repeat("x", dryRunPad)
	rj := addontest.ReplicatedJob("w").Pods(1)
	js := addontest.JobSet(ns, fmt.Sprintf("dryrun-%s-%d", name, i))
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
	return js.ReplicatedJobs(rj).Obj()
}
