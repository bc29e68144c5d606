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

// The start barrier's.
var (
	barrierWait = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "jobset_addons_sequencer_start_barrier_wait_seconds",
		Help:    "How long the first pod of a start barrier waited at it before it opened.",
		Buckets: prometheus.ExponentialBuckets(0.25, 2, 14),
	})
	barriersOpened = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "jobset_addons_sequencer_start_barriers_opened_total",
		Help: "Start barriers opened.",
	})
	barrierTimeouts = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "jobset_addons_sequencer_start_barrier_timeouts_total",
		Help: "Start barriers that timed out (their waiting pods failed).",
	})
	barrierPodsTold = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "jobset_addons_sequencer_start_barrier_pods_told_total",
		Help: "Pods whose barrier-state annotation was written (open or failed).",
	})
	barrierErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "jobset_addons_sequencer_start_barrier_errors_total",
		Help: "Errors of the start barrier, by reason (list, patch-pod, patch-jobset).",
	}, []string{"reason"})
	barrierReconcileDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "jobset_addons_sequencer_start_barrier_reconcile_duration_seconds",
		Help:    "Time of one start barrier reconcile, API calls included, by result (success, error).",
		Buckets: prometheus.ExponentialBuckets(0.0005, 2, 15),
	}, []string{"result"})
)

func init() {
	metrics.Registry.MustRegister(replicatedJobsReleased, podsReleased, reconcileErrors, reconcileDuration,
		barrierWait, barriersOpened, barrierTimeouts, barrierPodsTold, barrierErrors, barrierReconcileDuration)
}
