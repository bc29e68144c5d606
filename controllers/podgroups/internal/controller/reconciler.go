// Package controller is the podgroups reconciler: it keeps, for every JobSet that asks for gang
// scheduling, one PodGroup per gang (the JobSet, or each of its stages) in step with the JobSet's
// demand, creates a stage's PodGroup only once that stage may run, and deletes each PodGroup once
// its JobSet or stage has finished, so that no queue stays held.
package controller

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/controllers/podgroups/internal/gang"
	"github.com/jobset-addons/jobset-addons/pkg/addon"
	"github.com/jobset-addons/jobset-addons/pkg/addon/jobsets"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// JobSetNameIndex indexes Jobs and PodGroups by their JobSet's name.
const JobSetNameIndex = jobsets.NameIndex

// Reconciler reconciles JobSets that ask for gang scheduling.
type Reconciler struct {
	// Client reads JobSets, their Jobs, PriorityClasses and our PodGroups' metadata from the
	// cache, and writes PodGroups.
	Client client.Client
	// APIReader reads a whole PodGroup: one the cache does not hold (not ours), or one of ours
	// to update.
	APIReader client.Reader
	Recorder  events.EventRecorder
	Clock     clock.Clock
	// Installed are the backends whose PodGroup CRD the apiserver served at start.
	Installed map[contract.Scheduler]*Backend
	// DefaultQueue is the Volcano queue of a JobSet that names none.
	DefaultQueue string
	// made holds the PodGroups created that the cache does not show yet.
	made *addon.Made

	warned addon.Told
}

// IndexFields registers the field indexes the reconciler lists by.
func IndexFields(ctx context.Context, mgr ctrl.Manager, installed map[contract.Scheduler]*Backend) error {
	objs := []client.Object{&batchv1.Job{}}
	for _, b := range installed {
		objs = append(objs, b.Meta())
	}
	for _, o := range objs {
		if err := mgr.GetFieldIndexer().IndexField(ctx, o, JobSetNameIndex, jobsets.IndexByName); err != nil {
			return fmt.Errorf("indexing %T: %w", o, err)
		}
	}
	return nil
}

// SetupWithManager registers the reconciler for JobSets that ask for gang scheduling, for their
// Jobs (a stage's Jobs finishing ends its PodGroup; upstream dependsOn creating a later stage's
// Jobs starts it) and for our PodGroups (one deleted by hand is made again).
func (r *Reconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, concurrency int) error {
	var kinds []client.Object
	for _, b := range r.Installed {
		kinds = append(kinds, b.Meta())
	}
	var err error
	if r.made, err = addon.ObserveMade(ctx, mgr.GetCache(), kinds...); err != nil {
		return err
	}
	uses := predicate.NewPredicateFuncs(func(o client.Object) bool {
		js, ok := o.(*jobsetv1alpha2.JobSet)
		return ok && gang.Uses(js)
	})
	b := ctrl.NewControllerManagedBy(mgr).
		Named("podgroups").
		For(&jobsetv1alpha2.JobSet{}, builder.WithPredicates(uses)).
		Watches(&batchv1.Job{}, handler.EnqueueRequestsFromMapFunc(jobsets.JobSetOf), builder.WithPredicates(jobChanged())).
		WithOptions(controller.Options{MaxConcurrentReconciles: concurrency})
	for _, s := range slices.Sorted(maps.Keys(r.Installed)) {
		b = b.Owns(r.Installed[s].Meta(), builder.OnlyMetadata, builder.WithPredicates(podGroupChanged()))
	}
	return b.Complete(r)
}

// jobChanged passes a Job's creation, deletion, and the changes that can end a stage: its
// conditions. Status counters of running Jobs are not needed.
func jobChanged() predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			oldJob, ok1 := e.ObjectOld.(*batchv1.Job)
			newJob, ok2 := e.ObjectNew.(*batchv1.Job)
			return !ok1 || !ok2 || len(oldJob.Status.Conditions) != len(newJob.Status.Conditions) || jobsets.JobFinished(oldJob) != jobsets.JobFinished(newJob)
		},
	}
}

// podGroupChanged passes what may take one of our PodGroups away from what we wrote: its
// deletion, and a change of its labels or spec hash. Not its creation (we made it) nor the
// scheduler's status writes, which are many.
func podGroupChanged() predicate.Predicate {
	return predicate.Funcs{
		CreateFunc: func(event.CreateEvent) bool { return false },
		UpdateFunc: func(e event.UpdateEvent) bool {
			return !maps.Equal(e.ObjectOld.GetLabels(), e.ObjectNew.GetLabels()) ||
				e.ObjectOld.GetAnnotations()[contract.PodGroupSpecHashAnnotationKey] != e.ObjectNew.GetAnnotations()[contract.PodGroupSpecHashAnnotationKey]
		},
	}
}

// Reconcile brings the JobSet's PodGroups to what its gangs, stages and state ask for.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, err error) {
	start := r.Clock.Now()
	defer func() { addon.ObserveReconcile(reconcileDuration, r.Clock.Since(start), err) }()
	js := &jobsetv1alpha2.JobSet{}
	if err := r.Client.Get(ctx, req.NamespacedName, js); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	log := ctrl.LoggerFrom(ctx).WithValues("jobset", klog.KObj(js))
	ctx = ctrl.LoggerInto(ctx, log)
	if !js.DeletionTimestamp.IsZero() || !gang.Uses(js) {
		r.warned.Forget(js.UID)
		return ctrl.Result{}, nil
	}
	s, errs := gang.Parse(js)
	if len(errs) > 0 {
		r.warnOnce(js, ReasonInvalid, "invalid", "No PodGroup is made: %v", errs.ToAggregate())
		return ctrl.Result{}, nil
	}
	b := r.Installed[s.Scheduler]
	if b == nil {
		r.warnOnce(js, ReasonSchedulerNotInstalled, "not-installed",
			"No PodGroup is made: the %s PodGroup CRD (%s) was not served when the podgroups controller started; install it and restart the controller",
			s.Scheduler, Backends[s.Scheduler].GroupVersionKind.GroupVersion())
		return ctrl.Result{}, nil
	}
	gangs, errs := gang.Gangs(js, s.Scheduler)
	if len(errs) > 0 {
		r.warnOnce(js, ReasonInvalid, "invalid", "No PodGroup is made: %v", errs.ToAggregate())
		return ctrl.Result{}, nil
	}
	if !gang.Admitted(js, s, gangs) {
		r.warnOnce(js, ReasonNotAdmitted, "not-admitted",
			"The JobSet was created while the podgroups webhook was not running: its pods name no PodGroup and are not gang-scheduled; re-create the JobSet")
		return ctrl.Result{}, nil
	}

	want, why, err := r.wanted(ctx, js, gangs)
	if err != nil {
		return ctrl.Result{}, err
	}
	list := b.MetaList()
	if err := r.Client.List(ctx, list, client.InNamespace(js.Namespace), client.MatchingFields{JobSetNameIndex: js.Name}); err != nil {
		reconcileErrors.WithLabelValues("list").Inc()
		return ctrl.Result{}, fmt.Errorf("listing PodGroups: %w", err)
	}
	have := map[string]client.Object{}
	for i := range list.Items {
		if pg := &list.Items[i]; Ours(pg, js) {
			have[pg.GetName()] = pg
		}
	}

	var errList []error
	waiting := false
	for _, g := range want {
		if have[g.Name] == nil && r.made.Pending(types.NamespacedName{Namespace: js.Namespace, Name: g.Name}) {
			// Created by this process, not in the cache yet: its arrival brings the next
			// reconcile, or, should none come, the requeue.
			waiting = true
		} else if err := r.ensure(ctx, js, b, g, s, have[g.Name]); err != nil {
			errList = append(errList, err)
		}
		delete(have, g.Name)
	}
	for _, name := range slices.Sorted(maps.Keys(have)) {
		if err := r.delete(ctx, js, b, have[name], why[name]); err != nil {
			errList = append(errList, err)
		}
	}
	if err := errors.Join(errList...); err != nil {
		r.Recorder.Eventf(js, nil, corev1.EventTypeWarning, ReasonFailed, actionUpdate, "%v", err)
		return ctrl.Result{}, err
	}
	if waiting {
		return ctrl.Result{RequeueAfter: addon.MadeTTL}, nil
	}
	return ctrl.Result{}, nil
}

// wanted are the gangs whose PodGroup should exist now, and, for the others that may exist,
// why they should not:
//   - none once the JobSet has finished;
//   - a JobSet that is not sequenced: its one gang, suspended or not (Kueue may change the
//     demand while suspended; the PodGroup follows);
//   - a sequenced JobSet: each stage that may run in the current restart attempt (stage 0; a
//     stage the sequencer released; a stage upstream dependsOn holds back once upstream has
//     created its Jobs) and has not finished yet (all its Jobs of the attempt Complete).
func (r *Reconciler) wanted(ctx context.Context, js *jobsetv1alpha2.JobSet, gangs []gang.Gang) ([]gang.Gang, map[string]string, error) {
	why := map[string]string{}
	if jobsets.Finished(js) {
		for _, g := range gangs {
			why[g.Name] = "the JobSet finished"
		}
		return nil, why, nil
	}
	if len(gangs) == 1 {
		return gangs, why, nil
	}
	var jobs batchv1.JobList
	if err := r.Client.List(ctx, &jobs, client.InNamespace(js.Namespace), client.MatchingFields{JobSetNameIndex: js.Name}); err != nil {
		reconcileErrors.WithLabelValues("list").Inc()
		return nil, nil, fmt.Errorf("listing Jobs: %w", err)
	}
	jobs.Items = jobsets.OwnedJobs(js, jobs.Items)
	attempt := jobsets.CurrentAttempt(js, jobs.Items)
	released := contract.Released{RestartAttempt: attempt}
	if v, ok := js.Annotations[contract.ReleasedAnnotationKey]; ok {
		if got, errs := contract.ParseReleased(v, nil); len(errs) == 0 && got.RestartAttempt == attempt {
			released = got
		}
	}
	created, complete := map[string]int32{}, map[string]int32{}
	for i := range jobs.Items {
		j := &jobs.Items[i]
		if jobsets.AttemptOf(j.Labels) != attempt {
			continue
		}
		rj := j.Labels[contract.ReplicatedJobNameLabelKey]
		created[rj]++
		if jobsets.JobHas(j, batchv1.JobComplete) {
			complete[rj]++
		}
	}
	var want []gang.Gang
	for _, g := range gangs {
		st := g.Stage
		mayRun := released.StageReleased(st)
		if !st.Gated && st.Index > 0 {
			mayRun = slices.ContainsFunc(st.ReplicatedJobs, func(rj string) bool { return created[rj] > 0 })
		}
		finished := true
		for _, name := range st.ReplicatedJobs {
			if complete[name] < jobsets.ReplicatedJob(js, name).Replicas {
				finished = false
			}
		}
		switch {
		case finished:
			why[g.Name] = fmt.Sprintf("stage %d finished in restart attempt %d", st.Index, attempt)
		case !mayRun:
			why[g.Name] = fmt.Sprintf("stage %d may not run yet in restart attempt %d", st.Index, attempt)
		default:
			want = append(want, g)
		}
	}
	return want, why, nil
}

// ensure creates the gang's PodGroup, or updates ours when the demand changed. have is the
// metadata of ours, from the cache, or nil.
func (r *Reconciler) ensure(ctx context.Context, js *jobsetv1alpha2.JobSet, b *Backend, g gang.Gang, s gang.Settings, have client.Object) error {
	pc, _ := g.PriorityClass(r)
	want := b.Build(js, g, s, pc, r.DefaultQueue)
	wantHash := want.GetAnnotations()[contract.PodGroupSpecHashAnnotationKey]
	if have == nil {
		err := r.Client.Create(ctx, want)
		if err == nil {
			r.made.Created(want)
			podGroupsCreated.WithLabelValues(string(b.Scheduler)).Inc()
			ctrl.LoggerFrom(ctx).V(1).Info("Created a PodGroup", "podGroup", g.Name, "minMember", g.MinMember)
			r.Recorder.Eventf(js, want, corev1.EventTypeNormal, ReasonCreated, actionCreate,
				"Created %s PodGroup %s: minMember %d, minResources %s", b.Scheduler, g.Name, g.MinMember, describe(g.MinResources))
			r.checkTopology(js, b, s, want)
			return nil
		}
		if !apierrors.IsAlreadyExists(err) {
			reconcileErrors.WithLabelValues("create").Inc()
			return fmt.Errorf("creating PodGroup %s: %w", g.Name, err)
		}
		// Ours and not in the cache yet, or someone else's.
		have = b.New()
		if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(want), have); err != nil {
			return client.IgnoreNotFound(err)
		}
		if !Ours(have, js) {
			r.warnOnce(js, ReasonNameTaken, "name-taken",
				"PodGroup %s exists and is not one podgroups made for this JobSet: it is left alone, and the pods that name it are scheduled against it", g.Name)
			return nil
		}
	}
	if have.GetAnnotations()[contract.PodGroupSpecHashAnnotationKey] == wantHash {
		return nil
	}
	if _, meta := have.(*metav1.PartialObjectMetadata); meta {
		// The cache holds metadata only: the update starts from the whole PodGroup as it is.
		have = b.New()
		if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(want), have); err != nil {
			return client.IgnoreNotFound(err) // deleted meanwhile: the delete event brings us back
		}
		if !Ours(have, js) || have.GetAnnotations()[contract.PodGroupSpecHashAnnotationKey] == wantHash {
			return nil // changed meanwhile: its event brings us back
		}
	}
	patchBase := have.DeepCopyObject().(client.Object)
	b.Adopt(have, want)
	if err := r.Client.Patch(ctx, have, client.MergeFrom(patchBase)); err != nil {
		if apierrors.IsNotFound(err) {
			return nil // deleted meanwhile: the delete event brings us back
		}
		reconcileErrors.WithLabelValues("update").Inc()
		return fmt.Errorf("updating PodGroup %s: %w", g.Name, err)
	}
	podGroupsUpdated.WithLabelValues(string(b.Scheduler)).Inc()
	r.Recorder.Eventf(js, have, corev1.EventTypeNormal, ReasonUpdated, actionUpdate,
		"Updated %s PodGroup %s to the JobSet's demand: minMember %d, minResources %s", b.Scheduler, g.Name, g.MinMember, describe(g.MinResources))
	r.checkTopology(js, b, s, have)
	return nil
}

// checkTopology warns once when the apiserver dropped the networkTopology the PodGroup was sent
// with.
func (r *Reconciler) checkTopology(js *jobsetv1alpha2.JobSet, b *Backend, s gang.Settings, got client.Object) {
	if s.NetworkTopology != nil && b.droppedTopology(got) {
		r.warnOnce(js, ReasonNetworkTopologyDropped, "topology-dropped",
			"The %s PodGroup CRD installed has no spec.networkTopology and dropped it from PodGroup %s: upgrade Volcano's CRDs for network-topology-aware scheduling",
			b.Scheduler, got.GetName())
	}
}

// delete deletes one of our PodGroups, with a UID precondition: never a newer one of the name.
func (r *Reconciler) delete(ctx context.Context, js *jobsetv1alpha2.JobSet, b *Backend, pg client.Object, why string) error {
	uid := pg.GetUID()
	if err := r.Client.Delete(ctx, pg, client.Preconditions{UID: &uid}); err != nil {
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			return nil
		}
		reconcileErrors.WithLabelValues("delete").Inc()
		return fmt.Errorf("deleting PodGroup %s: %w", pg.GetName(), err)
	}
	if why == "" {
		why = "it is no gang of the JobSet"
	}
	podGroupsDeleted.WithLabelValues(string(b.Scheduler)).Inc()
	ctrl.LoggerFrom(ctx).V(1).Info("Deleted a PodGroup", "podGroup", pg.GetName(), "why", why)
	r.Recorder.Eventf(js, pg, corev1.EventTypeNormal, ReasonDeleted, actionDelete, "Deleted %s PodGroup %s: %s", b.Scheduler, pg.GetName(), why)
	return nil
}

// PriorityClassValue reads a PriorityClass's value from the cache.
func (r *Reconciler) PriorityClassValue(name string) (int32, bool) {
	return PriorityClassValue(context.Background(), r.Client, name)
}

// PriorityClassValue reads a PriorityClass's value through c.
func PriorityClassValue(ctx context.Context, c client.Reader, name string) (int32, bool) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var pc schedulingv1.PriorityClass
	if err := c.Get(ctx, client.ObjectKey{Name: name}, &pc); err != nil {
		return 0, false
	}
	return pc.Value, true
}

func (r *Reconciler) warnOnce(js *jobsetv1alpha2.JobSet, reason, metricReason, format string, args ...any) {
	if !r.warned.First(js.UID, reason) {
		return
	}
	reconcileErrors.WithLabelValues(metricReason).Inc()
	r.Recorder.Eventf(js, nil, corev1.EventTypeWarning, reason, actionSkip, format, args...)
}

// describe writes a ResourceList as cpu=4,memory=8Gi, sorted by name.
func describe(l corev1.ResourceList) string {
	if len(l) == 0 {
		return "none"
	}
	var parts []string
	for _, name := range slices.Sorted(maps.Keys(l)) {
		q := l[name]
		parts = append(parts, fmt.Sprintf("%s=%s", name, q.String()))
	}
	return strings.Join(parts, ",")
}
