package bench

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/e2e/testbed"
	"github.com/jobset-addons/jobset-addons/pkg/addon/addontest"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// The resourceclaims controller's own defaults (controllers/resourceclaims/main.go), which the
// bare client below gets too.
const rcQPS, rcBurst = 200, 300

var claimList = resourcev1.SchemeGroupVersion.WithKind("ResourceClaimList")

const benchTemplates = `[{metadata: {name: dev}, spec: {devices: {requests: [{name: d, exactly: {deviceClassName: bench}}]}}}]`

// BenchmarkResourceClaims runs the resourceclaims controller on the testbed and prints its
// table. RESOURCECLAIMS_BENCH=latency,admission,claims picks some scenarios.
func BenchmarkResourceClaims(b *testing.B) {
	runAddonBench(b, "resourceclaims", []scenario{
		{"latency", func(e benchEnv) []row { return jobWebhookLatency(e.ctx, e.b, e.c, e.cs, e.tb) }},
		{"admission", resourceClaimsAdmission},
		{"claims", func(e benchEnv) []row { return claimsVersusBare(e.ctx, e.b, e.c, e.cs, e.tb, 100, 0) }},
	})
}

// jobWebhookLatency creates suspended JobSet-like Jobs with templates (no pods) at 100/s.
func jobWebhookLatency(ctx context.Context, b *testing.B, c client.Client, cs kubernetes.Interface, tb testbed.Config) []row {
	ns := namespace(ctx, b, c, "bench-jobhook")
	return webhookLatency(ctx, b, cs, tb, webhookLoad{
		addon: "resourceclaims", webhook: "mjob.resourceclaims.jobset-addons.io", path: "/mutate-batch-v1-job", kind: "Job",
		group: "batch", version: "v1", resource: "jobs",
		create: func(i int, null bool) error {
			// No JobSet owns these Jobs: the controller leaves them alone.
			labels := map[string]string{contract.JobSetNameLabelKey: "bench"}
			annotations := map[string]string{contract.TemplatesAnnotationKey: benchTemplates}
			name := fmt.Sprintf("bench-w-%d", i)
			if null {
				// The same Job, out of the Job webhook's scope (its matchConditions ask for
				// the annotation): every cache of JobSet Jobs takes it as it takes ours.
				labels[nullLabel] = "true"
				annotations = nil
				name = fmt.Sprintf("null-w-%d", i)
			}
			return c.Create(ctx, &batchv1.Job{
				ObjectMeta: metav1.ObjectMeta{
					Namespace: ns, Name: name, Labels: labels, Annotations: annotations,
				},
				Spec: batchv1.JobSpec{
					Suspend: ptr.To(true),
					Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
						RestartPolicy: corev1.RestartPolicyNever,
						Containers:    []corev1.Container{{Name: "main", Image: "busybox"}},
					}},
				},
			})
		},
	})
}

// claimsVersusBare: jobSets suspended JobSets x 5 Jobs with one template each (100: 500 claims). First
// end to end, from the first JobSet create to the last claim, with when the last Job appeared
// (the JobSet controller makes them) and each claim's lag behind its Job and its JobSet, from
// watches. Then the controller's own rate against a bare client-go loop creating the very same
// 500 claims (name, labels, owner, spec) with the controller's QPS and burst (restartBench).
// rounds is restartBench's (0: benchRounds()).
func claimsVersusBare(ctx context.Context, b *testing.B, c client.Client, cs kubernetes.Interface, tb testbed.Config, jobSets, rounds int) []row {
	const replicas = 5
	total := jobSets * replicas
	ours := client.MatchingLabels{contract.ManagedByLabelKey: contract.ResourceClaimsManagedByValue}

	ns := namespace(ctx, b, c, "bench-rc")
	seen := newArrivals()
	seen.follow("jobset", watchList(ctx, b, tb, &jobsetv1alpha2.JobSetList{}, ns))
	seen.follow("job", watchList(ctx, b, tb, &batchv1.JobList{}, ns))
	seen.follow("claim", watchList(ctx, b, tb, &resourcev1.ResourceClaimList{}, ns))
	defer seen.stop()

	hooks := []string{"mjobset.kb.io", "vjobset.kb.io", "vjobset.resourceclaims.jobset-addons.io"}
	before := map[string]histogram{}
	var err error
	for _, h := range hooks {
		if before[h], err = webhookHistogram(ctx, cs, h); err != nil {
			b.Fatal(err)
		}
	}
	start := time.Now()
	if err := createParallel(jobSets, 8, func(i int) error {
		return c.Create(ctx, addontest.JobSet(ns, fmt.Sprintf("rc-%d", i)).Suspend(true).ReplicatedJobs(
			addontest.ReplicatedJob("w").Replicas(replicas).CompletionMode(nil).BackoffLimit(nil).
				JobAnnotation(contract.TemplatesAnnotationKey, benchTemplates),
		).Obj())
	}); err != nil {
		b.Fatal(err)
	}
	created := time.Since(start)
	var admission []string
	for _, h := range hooks {
		after, err := webhookHistogram(ctx, cs, h)
		if err != nil {
			b.Fatal(err)
		}
		d := after.minus(before[h])
		admission = append(admission, fmt.Sprintf("%s %s/%s", strings.SplitN(h, ".", 2)[0]+"."+strings.SplitN(h, ".", 3)[1], fmtSeconds(d.quantile(0.5)), fmtSeconds(d.quantile(0.99))))
	}
	endToEnd := timeUntil(ctx, b, c, start, claimList, ns, ours, total)
	seen.waitFor(total, 15*time.Second) // the watches may trail the lists
	lastJob, lags := seen.lags(start, "-dev")
	jsLags := seen.jobSetLags(replicas)
	seen.stop()

	// The controller's own rate: once every Job exists and owns its claim, the same 500 claims
	// are made again by the bare loop and by the controller (restartBench).
	timeUntil(ctx, b, c, time.Now(), batchv1.SchemeGroupVersion.WithKind("JobList"), ns, nil, total)
	time.Sleep(2 * time.Second)
	var made resourcev1.ResourceClaimList
	if err := c.List(ctx, &made, client.InNamespace(ns), ours); err != nil {
		b.Fatal(err)
	}
	if len(made.Items) != total {
		b.Fatalf("%d claims, want %d", len(made.Items), total)
	}
	for i := range made.Items {
		m := &made.Items[i]
		m.ObjectMeta = metav1.ObjectMeta{Namespace: m.Namespace, Name: m.Name, Labels: m.Labels, Annotations: m.Annotations, OwnerReferences: m.OwnerReferences}
		m.Status = resourcev1.ResourceClaimStatus{}
	}
	res := restartBench{
		addon: "resourceclaims", ns: ns, list: claimList, resource: "resourceclaims", ours: ours, n: total,
		qps: rcQPS, burst: rcBurst,
		bare: func(rc *rest.Config) func(i int) error {
			bare, err := kubernetes.NewForConfig(rc)
			if err != nil {
				b.Fatal(err)
			}
			return func(i int) error {
				_, err := bare.ResourceV1().ResourceClaims(ns).Create(ctx, made.Items[i].DeepCopy(), metav1.CreateOptions{})
				return err
			}
		},
		eventReason: "ResourceClaimsCreated", events: total, rounds: rounds,
	}.run(ctx, b, c, tb, cs)
	return append(res.rows(fmt.Sprintf("%d claims (%d JobSets x %d Jobs), QPS %d", total, jobSets, replicas, rcQPS), "ratio >= 0.9", total), []row{
		{what: fmt.Sprintf("%d JobSets created to %d claims, end to end", jobSets, total), ours: endToEnd.Round(time.Millisecond).String(), target: "-"},
		{what: fmt.Sprintf("  the %d JobSets created (their admission included)", jobSets), ours: created.Round(time.Millisecond).String(), target: "-"},
		{what: "  JobSet webhooks p50/p99 <=: " + strings.Join(admission, ", "), target: "-"},
		{what: fmt.Sprintf("  claim minus its JobSet's arrival, p50/p99 (%d)", len(jsLags)), ours: quantile(jsLags, 0.5).Round(time.Millisecond).String() + " / " + quantile(jsLags, 0.99).Round(time.Millisecond).String(), target: "-"},
		{what: fmt.Sprintf("  the %d Jobs exist (made by the JobSet controller)", total), ours: lastJob.Round(time.Millisecond).String(), target: "-"},
		{what: fmt.Sprintf("  claim minus its Job's arrival, p50 (%d Jobs; < 0: claim first)", len(lags)), ours: quantile(lags, 0.5).Round(time.Millisecond).String(), target: "-"},
		{what: fmt.Sprintf("  claim minus its Job's arrival, p99 (%d Jobs)", len(lags)), ours: quantile(lags, 0.99).Round(time.Millisecond).String(), target: "-"},
		{what: "  claims that existed before their Job", ours: fmt.Sprintf("%d of %d", countNegative(lags), len(lags)), target: "-"},
	}...)
}

// arrivals records when a watch first showed each object.
type arrivals struct {
	mu      sync.Mutex
	when    map[string]time.Time // kind/name -> first seen
	watches []watch.Interface
	// ended counts the watches whose results ended (the apiserver may end a watch).
	ended int
}

func newArrivals() *arrivals { return &arrivals{when: map[string]time.Time{}} }

// follow records, in the background, when each object of w is first seen, as kind/name.
func (a *arrivals) follow(kind string, w watch.Interface) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.watches = append(a.watches, w)
	go a.record(kind, w)
}

func (a *arrivals) record(kind string, w watch.Interface) {
	for ev := range w.ResultChan() {
		if ev.Type != watch.Added {
			continue
		}
		o, ok := ev.Object.(metav1.Object)
		if !ok {
			continue
		}
		now := time.Now()
		a.mu.Lock()
		if _, ok := a.when[kind+"/"+o.GetName()]; !ok {
			a.when[kind+"/"+o.GetName()] = now
		}
		a.mu.Unlock()
	}
	a.mu.Lock()
	a.ended++
	a.mu.Unlock()
}

// stop ends the watches, so that they add no load to what is measured next.
func (a *arrivals) stop() {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, w := range a.watches {
		w.Stop()
	}
}

// waitFor waits until the watches showed n Jobs and n claims, every watch ended, or timeout
// passes.
func (a *arrivals) waitFor(n int, timeout time.Duration) {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		a.mu.Lock()
		jobs, claims := 0, 0
		for key := range a.when {
			switch {
			case strings.HasPrefix(key, "job/"):
				jobs++
			case strings.HasPrefix(key, "claim/"):
				claims++
			}
		}
		ended := a.ended == len(a.watches)
		a.mu.Unlock()
		if (jobs >= n && claims >= n) || ended {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func countNegative(d []time.Duration) int {
	n := 0
	for _, x := range d {
		if x < 0 {
			n++
		}
	}
	return n
}

// jobSetLags is, for each claim rc-I-w-J-dev, the time from its JobSet rc-I's arrival.
func (a *arrivals) jobSetLags(replicas int) []time.Duration {
	a.mu.Lock()
	defer a.mu.Unlock()
	var lags []time.Duration
	for key, t := range a.when {
		js, ok := strings.CutPrefix(key, "jobset/")
		if !ok {
			continue
		}
		for j := range replicas {
			if ct, ok := a.when[fmt.Sprintf("claim/%s-w-%d-dev", js, j)]; ok {
				lags = append(lags, ct.Sub(t))
			}
		}
	}
	return lags
}

// lags returns when the last Job appeared after start, and for each Job the time from its
// appearance to that of its claim <job><suffix>.
func (a *arrivals) lags(start time.Time, suffix string) (time.Duration, []time.Duration) {
	a.mu.Lock()
	defer a.mu.Unlock()
	var last time.Duration
	var lags []time.Duration
	for key, t := range a.when {
		job, ok := strings.CutPrefix(key, "job/")
		if !ok {
			continue
		}
		last = max(last, t.Sub(start))
		if ct, ok := a.when["claim/"+job+suffix]; ok {
			lags = append(lags, ct.Sub(t))
		}
	}
	return last, lags
}

func quantile(d []time.Duration, q float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[min(len(s)-1, int(q*float64(len(s))))]
}
