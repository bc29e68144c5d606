package controller

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/pkg/addon"
	"github.com/jobset-addons/jobset-addons/pkg/addon/checks/podgroups"
	"github.com/jobset-addons/jobset-addons/pkg/addon/jobsets"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// Kinds is Options.Kinds of the add-on: the kind names its writes count under.
var Kinds = []string{"PodGroup", "Workload", "CompositePodGroup"}

// WaitReason is the reason of jobset_addons_jobsets_waiting: a gang-scheduled JobSet whose
// Jobs have pods and not one of them ready or succeeded (the gang is not placed).
const WaitReason = "gang"

// Waits is Options.Waits: the running JobSets that use podgroups whose Jobs of the current
// attempt have active pods and none ready or succeeded, from the oldest such Job's creation.
func Waits(ctx context.Context, c client.Reader) ([]addon.Wait, error) {
	var jss jobsetv1alpha2.JobSetList
	if err := c.List(ctx, &jss, client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	var jobs batchv1.JobList
	if err := c.List(ctx, &jobs, client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	byJobSet := map[string][]batchv1.Job{}
	for _, j := range jobs.Items {
		k := j.Namespace + "/" + j.Labels[contract.JobSetNameLabelKey]
		byJobSet[k] = append(byJobSet[k], j)
	}
	var out []addon.Wait
	for i := range jss.Items {
		js := &jss.Items[i]
		if !podgroups.Uses(js) || ptr.Deref(js.Spec.Suspend, false) || jobsets.Finished(js) || contract.ManagedElsewhere(js.Spec.ManagedBy) {
			continue
		}
		key := js.Namespace + "/" + js.Name
		owned := jobsets.OwnedJobs(js, byJobSet[key])
		attempt := jobsets.CurrentAttempt(js, owned)
		var active, started int32
		var since time.Time
		for _, j := range owned {
			if jobsets.AttemptOf(j.Labels) != attempt {
				continue
			}
			active += j.Status.Active
			started += ptr.Deref(j.Status.Ready, 0) + j.Status.Succeeded
			if since.IsZero() || j.CreationTimestamp.Time.Before(since) {
				since = j.CreationTimestamp.Time
			}
		}
		if active > 0 && started == 0 {
			out = append(out, addon.Wait{Reason: WaitReason, Key: key, Since: since})
		}
	}
	return out, nil
}

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
		Help: "Errors, by reason (list, create, update, delete, invalid, not-admitted, not-installed, name-taken, prerequisite-missing, retry).",
	}, []string{"reason"})
	reconcileDuration = addon.ReconcileDuration("jobset_addons_podgroups_reconcile_duration_seconds", "JobSet", 0.0005)
)

func init() {
	metrics.Registry.MustRegister(podGroupsCreated, podGroupsUpdated, podGroupsDeleted, workloadsWritten, reconcileErrors, reconcileDuration)
	// Every series from the start, at 0, so that a rate() over them works before the first event.
	for _, s := range []string{"volcano", "coscheduling", "kubernetes", "kai"} {
		for _, c := range []*prometheus.CounterVec{podGroupsCreated, podGroupsUpdated, podGroupsDeleted} {
			c.WithLabelValues(s)
		}
	}
	for _, a := range []string{"created", "updated", "deleted"} {
		workloadsWritten.WithLabelValues(a)
	}
}
