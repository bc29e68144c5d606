package controller

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/jobset-addons/jobset-addons/pkg/addon"
	"github.com/jobset-addons/jobset-addons/pkg/addon/jobsets"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// Kinds is Options.Kinds of the add-on: it updates pods (their gate lifted).
var Kinds = []string{"Pod"}

// doneAt is when the stage's predecessors came to hold in the attempt: the latest Complete
// condition's transition among the Jobs of its Complete predecessors; a Ready predecessor has
// no such time, and counts as done at seen (the reconcile that saw it hold).
func doneAt(jobs []batchv1.Job, attempt int32, deps []contract.Dependency, seen time.Time) time.Time {
	var at time.Time
	for _, d := range deps {
		if d.Status != contract.DependencyComplete {
			if seen.After(at) {
				at = seen
			}
			continue
		}
		for i := range jobs {
			j := &jobs[i]
			if j.Labels[contract.ReplicatedJobNameLabelKey] != d.Name || jobsets.AttemptOf(j.Labels) != attempt {
				continue
			}
			for _, c := range j.Status.Conditions {
				if c.Type == batchv1.JobComplete && c.Status == corev1.ConditionTrue && c.LastTransitionTime.After(at) {
					at = c.LastTransitionTime.Time
				}
			}
		}
	}
	if at.IsZero() {
		return seen
	}
	return at
}

// observeHandoff records the hand-off of stage s: from doneAt to now, when the last gate of its
// pods was lifted.
func observeHandoff(s contract.Stage, done, now time.Time) {
	handoff.WithLabelValues(string(strictest(s.DependsOn))).Observe(max(now.Sub(done).Seconds(), 0))
}

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
	handoff = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "jobset_addons_sequencer_handoff_duration_seconds",
		Help:    "Time from a stage's predecessors holding (the last Complete condition of their Jobs; for Ready predecessors, the reconcile that saw them ready) to the last scheduling gate of the stage's pods lifted, by the strictest status waited for (Complete, Ready).",
		Buckets: []float64{0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120, 300},
	}, []string{"waited_for"})
	reconcileDuration = addon.ReconcileDuration("jobset_addons_sequencer_reconcile_duration_seconds", "JobSet", 0.0005)
)

func init() {
	metrics.Registry.MustRegister(replicatedJobsReleased, podsReleased, reconcileErrors, handoff, reconcileDuration)
	for _, s := range []contract.DependencyStatus{contract.DependencyComplete, contract.DependencyReady} {
		handoff.WithLabelValues(string(s))
		replicatedJobsReleased.WithLabelValues(string(s))
	}
}
