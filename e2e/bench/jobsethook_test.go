package bench

import (
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/pkg/addon/addontest"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// jobSetMaker makes the i-th JobSet of a JobSet admission bench in ns: one that uses the
// add-on, or, with null, the same JobSet without the add-on's annotation, labelled for the null
// webhook. With distinct, each JobSet's template differs (a label of its own), so that the
// add-on's webhook dry-runs it; without, all share one template, as a sweep's JobSets do.
type jobSetMaker func(ns string, i int, null, distinct bool) *jobsetv1alpha2.JobSet

// jobSetAdmission measures, from the client, how long the API server takes to create a JobSet
// that the add-on's JobSet webhooks admit (with their dry runs), against the same JobSet for the
// null webhook instead, in the order null, ours, ours, null: one at a time, then 100 at once
// (each JobSet with a template of its own, so that every one is dry-run), then 100 at once
// from one template (the webhook's remembered dry run). The apiserver's webhook histogram has
// buckets too coarse for a few milliseconds (5 ms, 25 ms, ...): the create's own time, of which
// every other step (JobSet's webhooks, storage) is the same on both sides, shows the difference.
// The add-on's handler time comes from its own histogram.
//
// Last, what one dry run the webhook makes costs by itself, in the same run: the object of a
// template (dryRun(i)) created with dryRun: All by the bench's client, one at a time and 100 at
// once, against a GET of the namespace (the cheapest round trip).
func jobSetAdmission(e benchEnv, addon, validatePath string, mk jobSetMaker, dryRun func(ns string, i int) client.Object) []row {
	nullWebhook(e.ctx, e.b, e.cs, e.tb, "jobset.x-k8s.io", "v1alpha2", "jobsets")
	ns := namespace(e.ctx, e.b, e.c, "bench-"+addon+"-admission")
	n := 0
	create := func(null, distinct bool, at int) []time.Duration {
		times := make([]time.Duration, at)
		first := n
		n += at
		var wg sync.WaitGroup
		for k := range at {
			wg.Add(1)
			go func() {
				defer wg.Done()
				js := mk(ns, first+k, null, distinct)
				start := time.Now()
				if err := e.c.Create(e.ctx, js); err != nil {
					e.b.Errorf("creating %s: %v", js.Name, err)
				}
				times[k] = time.Since(start)
			}()
		}
		wg.Wait()
		return times
	}
	measure := func(what string, rounds, at int, distinct bool) row {
		var ours, null []time.Duration
		for _, isNull := range []bool{true, false, false, true} {
			for range rounds {
				got := create(isNull, distinct, at)
				if isNull {
					null = append(null, got...)
				} else {
					ours = append(ours, got...)
				}
			}
		}
		p := func(d []time.Duration, q float64) string {
			return quantile(d, q).Round(100 * time.Microsecond).String()
		}
		return row{
			what:     fmt.Sprintf("JobSet create p50/p99, %s (%d)", what, len(ours)),
			ours:     p(ours, 0.5) + "/" + p(ours, 0.99),
			baseline: p(null, 0.5) + "/" + p(null, 0.99) + " null",
			ratio:    fmt.Sprintf("%.2f", float64(quantile(ours, 0.5))/float64(quantile(null, 0.5))),
			target:   "-",
		}
	}
	before, err := handlerHistogram(e.ctx, e.tb, addon, validatePath)
	if err != nil {
		e.b.Fatal(err)
	}
	rows := []row{measure("one at a time", 20, 1, true)}
	mid, err := handlerHistogram(e.ctx, e.tb, addon, validatePath)
	if err != nil {
		e.b.Fatal(err)
	}
	rows = append(rows, measure("100 at once", 1, 100, true), measure("100 at once, one template", 1, 100, false))
	after, err := handlerHistogram(e.ctx, e.tb, addon, validatePath)
	if err != nil {
		e.b.Fatal(err)
	}
	one, burst := mid.minus(before), after.minus(mid)
	timed := func(at int, call func(i int) error) []time.Duration {
		times := make([]time.Duration, at)
		var wg sync.WaitGroup
		for k := range at {
			wg.Add(1)
			go func() {
				defer wg.Done()
				start := time.Now()
				if err := call(k); err != nil {
					e.b.Errorf("%v", err)
				}
				times[k] = time.Since(start)
			}()
		}
		wg.Wait()
		return times
	}
	dry := func(i int) error { return e.c.Create(e.ctx, dryRun(ns, i), client.DryRunAll) }
	get := func(int) error { return e.c.Get(e.ctx, client.ObjectKey{Name: ns}, &corev1.Namespace{}) }
	for _, at := range []int{1, 100} {
		var d, g []time.Duration
		rounds := 40
		if at > 1 {
			rounds = 2
		}
		for r := range rounds {
			d = append(d, timed(at, func(i int) error { return dry(r*at + i) })...)
			g = append(g, timed(at, get)...)
		}
		p := func(x []time.Duration, q float64) string {
			return quantile(x, q).Round(100 * time.Microsecond).String()
		}
		rows = append(rows, row{
			what:     fmt.Sprintf("  one dry run by itself p50/p99, %d at once (%d)", at, len(d)),
			ours:     p(d, 0.5) + "/" + p(d, 0.99),
			baseline: p(g, 0.5) + "/" + p(g, 0.99) + " GET",
			ratio:    fmt.Sprintf("%.2f", float64(quantile(d, 0.5))/float64(quantile(g, 0.5))),
			target:   "-",
		})
	}
	return append(rows,
		row{what: fmt.Sprintf("  validating handler p50/p99, one at a time (%.0f)", one.count), ours: "<= " + fmtSeconds(one.quantile(0.5)) + "/" + fmtSeconds(one.quantile(0.99)), target: "-"},
		row{what: fmt.Sprintf("  validating handler p50/p99, 100 at once (%.0f)", burst.count), ours: "<= " + fmtSeconds(burst.quantile(0.5)) + "/" + fmtSeconds(burst.quantile(0.99)), target: "-"},
	)
}

// admissionJobSet is a suspended JobSet of one ReplicatedJob of 2 Jobs of 2 pods, container
// main mounting data, named i, labelled for the null webhook when null.
func admissionJobSet(ns string, i int, null bool) *jobsetv1alpha2.JobSet {
	js := addontest.JobSet(ns, fmt.Sprintf("a-%d", i)).Suspend(true)
	rj := addontest.ReplicatedJob("w").Replicas(2).Pods(2).BackoffLimit(nil).Mount("data")
	if null {
		js.Label(nullLabel, "true")
		rj.EmptyDir("data")
	}
	return js.ReplicatedJobs(rj).Obj()
}

// templateLabel is the label that makes each JobSet's template distinct.
func templateLabel(i int, distinct bool) string {
	if !distinct {
		return "{}"
	}
	return fmt.Sprintf("{bench.jobset-addons.io/i: %q}", fmt.Sprint(i))
}

// volumeClaimsAdmission: JobSets with one per-pod PVC template (4 PVCs each).
func volumeClaimsAdmission(e benchEnv) []row {
	dryRun := func(ns string, i int) client.Object {
		return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("dry-%d", i)}, Spec: pvcSpec()}
	}
	return jobSetAdmission(e, "volumeclaims", validateJobSetPath, func(ns string, i int, null, distinct bool) *jobsetv1alpha2.JobSet {
		js := admissionJobSet(ns, i, null)
		if !null {
			js.Annotations = map[string]string{contract.PoliciesAnnotationKey: `[{targetReplicatedJobs: [w], templates: [{metadata: {name: data, labels: ` + templateLabel(i, distinct) +
				`}, spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}}]}]`}
		}
		return js
	}, dryRun)
}

// resourceClaimsAdmission: JobSets with one claim template (a claim per Job, 2 each).
func resourceClaimsAdmission(e benchEnv) []row {
	dryRun := func(ns string, i int) client.Object {
		return &resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("dry-%d", i)}, Spec: resourcev1.ResourceClaimSpec{
			Devices: resourcev1.DeviceClaim{Requests: []resourcev1.DeviceRequest{{Name: "d", Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: "bench"}}}},
		}}
	}
	return jobSetAdmission(e, "resourceclaims", validateJobSetPath, func(ns string, i int, null, distinct bool) *jobsetv1alpha2.JobSet {
		js := admissionJobSet(ns, i, null)
		js.Spec.ReplicatedJobs[0].Template.Spec.Template.Spec.Containers[0].VolumeMounts = nil
		js.Spec.ReplicatedJobs[0].Template.Spec.Template.Spec.Volumes = nil
		if !null {
			js.Spec.ReplicatedJobs[0].Template.Annotations = map[string]string{contract.TemplatesAnnotationKey: `[{metadata: {name: dev, labels: ` + templateLabel(i, distinct) +
				`}, spec: {devices: {requests: [{name: d, exactly: {deviceClassName: bench}}]}}}]`}
		}
		return js
	}, dryRun)
}

// validateJobSetPath is where every add-on serves its validating JobSet webhook.
const validateJobSetPath = "/validate-jobset-x-k8s-io-v1alpha2-jobset"
