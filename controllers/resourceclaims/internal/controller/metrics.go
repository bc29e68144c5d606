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
	claimsAdopted = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "jobset_addons_resourceclaims_adopted_total",
		Help: "ResourceClaims made ahead of their Job (owned by the JobSet) that their Job then adopted.",
	})
	claimsDeleted = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "jobset_addons_resourceclaims_deleted_total",
		Help: "ResourceClaims deleted, by cause (finished: the Job finished and the template says Delete; stale: left by an earlier owner of the same name; unused: made ahead for a Job that will not come).",
	}, []string{"cause"})
	claimsSkipped = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "jobset_addons_resourceclaims_skipped_total",
		Help: "Claims not made for a Job, by reason (shadowed: the pod template's own claim wins; name-taken: a claim that is not ours has the name).",
	}, []string{"reason"})
	reconcileErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "jobset_addons_resourceclaims_errors_total",
		Help: "Errors, by reason (adopt, create, refused, delete, invalid, list).",
	}, []string{"reason"})
	reconcileDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "jobset_addons_resourceclaims_reconcile_duration_seconds",
		Help:    "Time of one JobSet reconcile, API calls included, by result (success, error).",
		Buckets: prometheus.ExponentialBuckets(0.001, 2, 15),
	}, []string{"result"})
)

func init() {
	metrics.Registry.MustRegister(claimsCreated, claimsAdopted, claimsDeleted, claimsSkipped, reconcileErrors, reconcileDuration)
}
