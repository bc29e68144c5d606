package controller

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Metrics carry bounded labels only, never a JobSet or a Job.
var (
	claimsCreated = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "jobset_addons_resourceclaims_created_total",
		Help: "ResourceClaims created for Jobs.",
	})
	claimsDeleted = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "jobset_addons_resourceclaims_deleted_total",
		Help: "ResourceClaims deleted, by cause (finished: the Job finished and the template says Delete; stale: left by an earlier Job of the same name).",
	}, []string{"cause"})
	claimsSkipped = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "jobset_addons_resourceclaims_skipped_total",
		Help: "Claims not made for a Job, by reason (shadowed: the pod template's own claim wins; name-taken: a claim that is not ours has the name).",
	}, []string{"reason"})
	reconcileErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "jobset_addons_resourceclaims_errors_total",
		Help: "Errors, by reason (create, delete, invalid, list).",
	}, []string{"reason"})
	reconcileDuration = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "jobset_addons_resourceclaims_reconcile_duration_seconds",
		Help:    "Time of one JobSet reconcile, API calls included.",
		Buckets: prometheus.ExponentialBuckets(0.001, 2, 15),
	})
)

func init() {
	metrics.Registry.MustRegister(claimsCreated, claimsDeleted, claimsSkipped, reconcileErrors, reconcileDuration)
}
