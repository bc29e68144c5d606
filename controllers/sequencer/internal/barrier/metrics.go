package barrier

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/jobset-addons/jobset-addons/pkg/addon"
)

// Metrics carry bounded labels only (cause, reason), never a JobSet.
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
	barrierBlocked = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "jobset_addons_sequencer_start_barrier_blocked_total",
		Help: "Start barriers told blocked (StartBarrierBlocked: a pod stuck before the barrier), by the cause's reason (a container's waiting reason, or Unschedulable).",
	}, []string{"reason"})
	barrierPodsTold = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "jobset_addons_sequencer_start_barrier_pods_told_total",
		Help: "Pods whose barrier-state annotation was written (open or failed).",
	})
	barrierPodsNudged = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "jobset_addons_sequencer_start_barrier_pods_nudged_total",
		Help: "Pods told again because their barrier container still ran seconds after their barrier-state was written.",
	})
	barrierErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "jobset_addons_sequencer_start_barrier_errors_total",
		Help: "Errors of the start barrier, by reason (list, patch-pod, patch-jobset).",
	}, []string{"reason"})
	barrierReconcileDuration = addon.ReconcileDuration("jobset_addons_sequencer_start_barrier_reconcile_duration_seconds", "start barrier", 0.0005)
)

func init() {
	metrics.Registry.MustRegister(barrierWait, barriersOpened, barrierTimeouts, barrierBlocked, barrierPodsTold, barrierPodsNudged, barrierErrors, barrierReconcileDuration)
	for _, reason := range append(StuckReasons, UnschedulableReason) {
		barrierBlocked.WithLabelValues(reason)
	}
}
