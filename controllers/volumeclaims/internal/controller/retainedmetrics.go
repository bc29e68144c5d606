package controller

import (
	"context"
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// ageBuckets are the age label values of the retained metrics: how long no pod used the PVC.
var ageBuckets = []struct {
	label string
	below time.Duration
}{
	{"lt1h", time.Hour},
	{"lt1d", 24 * time.Hour},
	{"lt7d", 7 * 24 * time.Hour},
	{"lt30d", 30 * 24 * time.Hour},
	{"ge30d", 0},
}

// ageLabel is the age bucket of a PVC unused for d.
func ageLabel(d time.Duration) string {
	for _, b := range ageBuckets {
		if d < b.below {
			return b.label
		}
	}
	return ageBuckets[len(ageBuckets)-1].label
}

var (
	retainedClaimsDesc = prometheus.NewDesc("jobset_addons_volumeclaims_retained_claims",
		"The add-on's PersistentVolumeClaims that a Retain keeps (their JobSet finished or gone) and no pod uses, by how long unused (age: lt1h, lt1d, lt7d, lt30d, ge30d).",
		[]string{"age"}, nil)
	retainedBytesDesc = prometheus.NewDesc("jobset_addons_volumeclaims_retained_bytes",
		"Storage of jobset_addons_volumeclaims_retained_claims (capacity, or the request while none is reported), by the same age.",
		[]string{"age"}, nil)
)

// retainedCollector reads the retained PVCs from the cache at each scrape.
type retainedCollector struct {
	c   client.Reader
	now func() time.Time
}

// registerRetained registers the retained metrics, read from c.
func registerRetained(c client.Reader) error {
	err := metrics.Registry.Register(&retainedCollector{c: c, now: time.Now})
	if err != nil && !errors.As(err, &prometheus.AlreadyRegisteredError{}) {
		return err
	}
	return nil
}

func (r *retainedCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- retainedClaimsDesc
	ch <- retainedBytesDesc
}

func (r *retainedCollector) Collect(ch chan<- prometheus.Metric) {
	counts, bytes, err := retained(context.Background(), r.c, r.now())
	if err != nil {
		ch <- prometheus.NewInvalidMetric(retainedClaimsDesc, err)
		return
	}
	for _, b := range ageBuckets {
		ch <- prometheus.MustNewConstMetric(retainedClaimsDesc, prometheus.GaugeValue, counts[b.label], b.label)
		ch <- prometheus.MustNewConstMetric(retainedBytesDesc, prometheus.GaugeValue, bytes[b.label], b.label)
	}
}

// retained counts the add-on's unused PVCs, not being deleted, whose JobSet is gone or finished,
// and their bytes, by age bucket.
func retained(ctx context.Context, c client.Reader, now time.Time) (counts, bytes map[string]float64, err error) {
	var pvcs corev1.PersistentVolumeClaimList
	if err := c.List(ctx, &pvcs, client.MatchingLabels{contract.ManagedByLabelKey: contract.VolumeClaimsManagedByValue}, client.UnsafeDisableDeepCopy); err != nil {
		return nil, nil, err
	}
	var jobSets jobsetv1alpha2.JobSetList
	if err := c.List(ctx, &jobSets, client.UnsafeDisableDeepCopy); err != nil {
		return nil, nil, err
	}
	running := map[[2]string]bool{}
	for i := range jobSets.Items {
		if js := &jobSets.Items[i]; !finished(js) {
			running[[2]string{js.Namespace, js.Name}] = true
		}
	}
	counts, bytes = map[string]float64{}, map[string]float64{}
	for i := range pvcs.Items {
		p := &pvcs.Items[i]
		since, ok := contract.VolumeClaimUnusedSince(p)
		if !ok || p.DeletionTimestamp != nil || running[[2]string{p.Namespace, p.Labels[contract.JobSetNameLabelKey]}] {
			continue
		}
		age := ageLabel(now.Sub(since))
		counts[age]++
		bytes[age] += storageOf(p)
	}
	return counts, bytes, nil
}

// storageOf is the PVC's capacity, or its request while it has none.
func storageOf(p *corev1.PersistentVolumeClaim) float64 {
	if q, ok := p.Status.Capacity[corev1.ResourceStorage]; ok {
		return q.AsApproximateFloat64()
	}
	q := p.Spec.Resources.Requests[corev1.ResourceStorage]
	return q.AsApproximateFloat64()
}
