package controller

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Metrics carry bounded labels only (status waited for, reason), never a JobSet.
var (
	replicatedJobsReleased = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "jobset_addons_sequencer_replicatedjobs_released_total",
		Help: "ReplicatedJobs released (scheduling gate lifted from their pods), by the strictest status waited for (Complete, Ready).",
	}, []string{"status"})
	podsReleased = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "jobset_addons_sequencer_pods_released_total",
		Help: "Pods whose sequencer scheduling gate was removed.",
	})
	reconcileErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "jobset_addons_sequencer_errors_total",
		Help: "Errors, by reason (list, patch-pod, patch-jobset, invalid, not-admitted).",
	}, []string{"reason"})
	reconcileDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "jobset_addons_sequencer_reconcile_duration_seconds",
		Help:    "Time of one JobSet reconcile, API calls included, by result (success, error).",
		Buckets: prometheus.ExponentialBuckets(0.0005, 2, 15),
	}, []string{"result"})
)

func init() {
	metrics.Registry.MustRegister(replicatedJobsReleased, podsReleased, reconcileErrors, reconcileDuration)
}
