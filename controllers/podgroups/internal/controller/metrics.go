package controller

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Metrics carry bounded labels only (scheduler, reason), never a JobSet.
var (
	podGroupsCreated = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "jobset_addons_podgroups_created_total",
		Help: "PodGroups created, by scheduler (volcano, coscheduling, kubernetes).",
	}, []string{"scheduler"})
	podGroupsUpdated = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "jobset_addons_podgroups_updated_total",
		Help: "PodGroups whose spec was updated to the JobSet's demand, by scheduler.",
	}, []string{"scheduler"})
	podGroupsDeleted = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "jobset_addons_podgroups_deleted_total",
		Help: "PodGroups deleted because their JobSet or stage finished, by scheduler.",
	}, []string{"scheduler"})
	workloadsWritten = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "jobset_addons_podgroups_workloads_total",
		Help: "Workloads (scheduling.k8s.io, scheduler kubernetes) written, by action (created, updated, deleted).",
	}, []string{"action"})
	reconcileErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "jobset_addons_podgroups_errors_total",
		Help: "Errors, by reason (list, create, update, delete, invalid, not-admitted, not-installed, name-taken).",
	}, []string{"reason"})
	reconcileDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "jobset_addons_podgroups_reconcile_duration_seconds",
		Help:    "Time of one JobSet reconcile, API calls included, by result (success, error).",
		Buckets: prometheus.ExponentialBuckets(0.0005, 2, 15),
	}, []string{"result"})
)

func init() {
	metrics.Registry.MustRegister(podGroupsCreated, podGroupsUpdated, podGroupsDeleted, workloadsWritten, reconcileErrors, reconcileDuration)
	// Every series from the start, at 0, so that a rate() over them works before the first event.
	for _, s := range []string{"volcano", "coscheduling", "kubernetes"} {
		for _, c := range []*prometheus.CounterVec{podGroupsCreated, podGroupsUpdated, podGroupsDeleted} {
			c.WithLabelValues(s)
		}
	}
	for _, a := range []string{"created", "updated", "deleted"} {
		workloadsWritten.WithLabelValues(a)
	}
}
