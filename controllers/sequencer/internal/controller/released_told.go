package controller

import (
	"context"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/pkg/addon"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// tellReleased logs and tells (an Event each) the ReplicatedJobs newly released, counts them,
// and, once their pods are released (podsReleased), observes each stage's hand-off time.
func (r *Reconciler) tellReleased(ctx context.Context, js *jobsetv1alpha2.JobSet, jobs []batchv1.Job, newly []contract.Stage, attempt int32, start time.Time, podsReleased bool) {
	for _, s := range newly {
		if podsReleased {
			observeHandoff(s, doneAt(jobs, attempt, s.DependsOn, start), r.Clock.Now())
		}
		status := strictest(s.DependsOn)
		for _, name := range s.ReplicatedJobs {
			replicatedJobsReleased.WithLabelValues(string(status)).Inc()
			ctrl.LoggerFrom(ctx).Info("Released a ReplicatedJob", "replicatedJob", name, "stage", s.Index, "attempt", attempt, "waitedFor", describe(s.DependsOn))
			addon.Tell(r.Recorder, js, firstJob(jobs, name), corev1.EventTypeNormal, ReasonStageReleased, actionRelease,
				"Released ReplicatedJob %s (stage %d, restart attempt %d): %s", name, s.Index, attempt, describe(s.DependsOn))
		}
	}
}

// warn emits a Warning once per JobSet and reason (addon.Told), and counts it.
func (r *Reconciler) warn(js *jobsetv1alpha2.JobSet, reason, metricReason, format string, args ...any) {
	if r.warned.Warn(r.Recorder, js, nil, reason, actionSkip, format, args...) {
		reconcileErrors.WithLabelValues(metricReason).Inc()
	}
}

// firstJob is a Job of ReplicatedJob name (nil when none is there yet), the related object of
// its StageReleased Event: the events API folds Events of one regarding object, related object,
// reason and action into a series that keeps the first note, so without it the release of a
// second ReplicatedJob would be shown as the first's.
func firstJob(jobs []batchv1.Job, name string) runtime.Object {
	var first *batchv1.Job
	for i := range jobs {
		if j := &jobs[i]; j.Labels[contract.ReplicatedJobNameLabelKey] == name && (first == nil || j.Name < first.Name) {
			first = j
		}
	}
	if first == nil {
		return nil // not a typed nil: the recorder takes a nil interface as "no related object"
	}
	return first
}
