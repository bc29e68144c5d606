// Package controller is the podgroups reconciler: it keeps, for every JobSet that asks for gang
// scheduling, one PodGroup per gang (the JobSet, or each of its stages) in step with the JobSet's
// demand, creates a stage's PodGroup only once that stage may run, and deletes each PodGroup once
// its JobSet or stage has finished, so that no queue stays held. What a PodGroup is, and what
// else a scheduler needs, is its backend's (package backend).
package controller

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/controllers/podgroups/internal/backend"
	"github.com/jobset-addons/jobset-addons/pkg/addon"
	"github.com/jobset-addons/jobset-addons/pkg/addon/checks/podgroups"
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
	// Backends are every backend, installed or not.
	Backends *backend.Registry
	// Installed are the backends whose kinds the apiserver served at start.
	Installed map[contract.Scheduler]backend.Backend
	// DefaultQueue is the Volcano queue of a JobSet that names none.
	DefaultQueue string
	// CompositeKind is the kind of CompositePodGroup the apiserver served at start
	// (backend.ServedCompositeKind: scheduling.k8s.io/v1beta1, else v1alpha3), the zero kind when
	// none: only then are composite gangs made, at that version, and their kind watched.
	CompositeKind schema.GroupVersionKind
	// made holds the PodGroups created that the cache does not show yet; madeWorkloads and
	// madeComposites the same for Workloads and CompositePodGroups (which may share a name with
	// a PodGroup).
	made, madeWorkloads, madeComposites *addon.Made
	// deleted holds the objects this process deleted that a finalizer may still hold (the
	// Workload API's podgroup-protection, while pods name a PodGroup) and the cache does not
	// show deleted yet: a reconcile would take such a one for one to delete, and delete it, and
	// tell it, again.
	deleted *addon.Changed

	warned addon.Told
	// started is when the process began: the gang objects the Job webhook made since (for a
	// Job that came before the reconcile that would have made them) are told as created when
	// the reconciler first finds them (first).
	started time.Time
	// waiting holds, per gang object made for another JobSet under the name of one of a
	// JobSet's gangs, the JobSets that wait for it to go; retry, the JobSets whose object went,
	// which their next reconcile nudges (retryHeld).
	waiting addon.Waiting
	retry   addon.Retries
}

// IndexFields registers the field indexes the reconciler lists by, and the JobSet webhook's
// (backend.GangIndex).
func IndexFields(ctx context.Context, mgr ctrl.Manager, backends *backend.Registry, installed map[contract.Scheduler]backend.Backend, composite schema.GroupVersionKind) error {
	for _, o := range indexed(installed, composite) {
		if err := mgr.GetFieldIndexer().IndexField(ctx, o, JobSetNameIndex, jobsets.IndexByName); err != nil {
			return fmt.Errorf("indexing %T: %w", o, err)
		}
	}
	if err := mgr.GetFieldIndexer().IndexField(ctx, &jobsetv1alpha2.JobSet{}, backend.GangIndex, backend.GangKeys(backends, composite)); err != nil {
		return fmt.Errorf("indexing JobSets by their gangs: %w", err)
	}
	return nil
}

// indexed are the objects listed by JobSetNameIndex: Jobs, and the metadata of every kind the
// installed backends write, and of CompositePodGroups of kind composite (unless zero).
func indexed(installed map[contract.Scheduler]backend.Backend, composite schema.GroupVersionKind) []client.Object {
	objs := []client.Object{&batchv1.Job{}}
	for _, b := range installed {
		for _, gvk := range backend.Kinds(b) {
			objs = append(objs, backend.Meta(gvk))
		}
	}
	if !composite.Empty() {
		objs = append(objs, backend.Meta(composite))
	}
	return objs
}

// first tells the objects of kind the Job webhook made from those the reconciler made
// (addon.MadeFirst), in warned.
func (r *Reconciler) first(kind string) addon.MadeFirst {
	return addon.MadeFirst{Started: r.started, Told: &r.warned, Kind: kind}
}

// composites tells whether composite gangs are made: CompositePodGroup was served at start.
func (r *Reconciler) composites() bool { return !r.CompositeKind.Empty() }

// SetupWithManager registers the reconciler for JobSets that ask for gang scheduling, for their
// Jobs (a stage's Jobs finishing ends its PodGroup; upstream dependsOn creating a later stage's
// Jobs starts it) and for our PodGroups (one deleted by hand is made again).
func (r *Reconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, concurrency int) error {
	r.started = time.Now().Truncate(time.Second)
	if err := addon.ForgetGone(mgr, addon.DefaultForgetEvery, &r.warned, &jobsetv1alpha2.JobSetList{}); err != nil {
		return err
	}
	var kinds, workloads, composites []client.Object
	for _, b := range r.Installed {
		kinds = append(kinds, backend.Meta(b.Kind()))
		if w, ok := b.(backend.Workloads); ok {
			workloads = append(workloads, backend.Meta(w.WorkloadKind()))
		}
	}
	if r.composites() {
		composites = append(composites, backend.Meta(r.CompositeKind))
	}
	var err error
	if r.made, err = addon.ObserveMade(ctx, mgr.GetCache(), kinds...); err != nil {
		return err
	}
	if r.madeWorkloads, err = addon.ObserveMade(ctx, mgr.GetCache(), workloads...); err != nil {
		return err
	}
	if r.madeComposites, err = addon.ObserveMade(ctx, mgr.GetCache(), composites...); err != nil {
		return err
	}
	r.deleted = &addon.Changed{TTL: addon.MadeTTL, Clock: r.Clock}
	uses := predicate.NewPredicateFuncs(func(o client.Object) bool {
		js, ok := o.(*jobsetv1alpha2.JobSet)
		return ok && podgroups.Uses(js)
	})
	b := ctrl.NewControllerManagedBy(mgr).
		Named("podgroups").
		WatchesRawSource(addon.For(mgr, &jobsetv1alpha2.JobSet{}, uses, jobSetChanged)).
		WatchesRawSource(addon.Watches(mgr, &batchv1.Job{}, handler.EnqueueRequestsFromMapFunc(jobsets.JobSetOf), jobChanged())).
		WithOptions(controller.Options{MaxConcurrentReconciles: concurrency})
	// Each kind twice: its objects reconcile their own JobSet, and, deleted, the JobSets that
	// waited for them to go (taken).
	for _, s := range slices.Sorted(maps.Keys(r.Installed)) {
		for _, gvk := range backend.Kinds(r.Installed[s]) {
			b = b.WatchesRawSource(addon.Owns(mgr, &jobsetv1alpha2.JobSet{}, backend.Meta(gvk), podGroupChanged())).
				WatchesRawSource(addon.Watches(mgr, backend.Meta(gvk), r.waiting.Gone(r.retry.Add)))
		}
	}
	for _, o := range composites {
		b = b.WatchesRawSource(addon.Owns(mgr, &jobsetv1alpha2.JobSet{}, o, podGroupChanged())).
			WatchesRawSource(addon.Watches(mgr, o, r.waiting.Gone(r.retry.Add)))
	}
	return b.Complete(addon.Busy(r))
}

// jobSetChanged passes the JobSet updates that change what a reconcile reads (addon.ChangesOf):
// of its status, whether it finished and its restarts (a PodGroup's claims are the Jobs' of
// the current attempt). Not JobSet's writes of its Jobs' counts.
var jobSetChanged = addon.ChangesOf(jobsets.RunState)

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

// priorityClass is gang g's PodGroup priority class.
func (r *Reconciler) priorityClass(g podgroups.Gang) string {
	pc, _ := g.PriorityClass(r)
	return pc
}
