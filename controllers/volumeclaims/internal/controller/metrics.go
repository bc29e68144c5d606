package controller

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Metrics carry bounded labels only: scope (shared, per-pod) and reason, never a JobSet.
var (
	claimsCreated = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "jobset_addons_volumeclaims_created_total",
		Help: "PersistentVolumeClaims created, by scope (shared, per-pod).",
	}, []string{"scope"})
	claimsReused = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "jobset_addons_volumeclaims_reused_total",
		Help: "PersistentVolumeClaims that already existed (retained or pre-created) and were used as they are, by scope.",
	}, []string{"scope"})
	claimsDeleted = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "jobset_addons_volumeclaims_deleted_total",
		Help: "PersistentVolumeClaims deleted by retention (whenComplete, whenFailed), by scope.",
	}, []string{"scope"})
	podsDeleted = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "jobset_addons_volumeclaims_finished_pods_deleted_total",
		Help: "Finished pods deleted because they held PersistentVolumeClaims deleted by retention (finishedPods: Delete).",
	})
	claimsHeld = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "jobset_addons_volumeclaims_held",
		Help: "PersistentVolumeClaims deleted by retention and still Terminating, held by pods that ran with them.",
	})
	reconcileErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "jobset_addons_volumeclaims_errors_total",
		Help: "Errors, by reason (create, refused, delete, adopt, invalid, list).",
	}, []string{"reason"})
	reconcileDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "jobset_addons_volumeclaims_reconcile_duration_seconds",
		Help:    "Time of one JobSet reconcile, API calls included, by result (success, error).",
		Buckets: prometheus.ExponentialBuckets(0.001, 2, 15),
	}, []string{"result"})
)

func init() {
	metrics.Registry.MustRegister(claimsCreated, claimsReused, claimsDeleted, podsDeleted, claimsHeld, reconcileErrors, reconcileDuration)
}

func scope(shared bool) string {
	if shared {
		return "shared"
	}
	return "per-pod"
}
