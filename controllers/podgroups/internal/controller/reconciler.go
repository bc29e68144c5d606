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
	"sync"
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
	// Composites tells whether the apiserver served CompositePodGroup (scheduling.k8s.io/v1alpha3)
	// at start: only then are composite gangs made and their kind watched.
	Composites bool
	// made holds the PodGroups created that the cache does not show yet; madeWorkloads and
	// madeComposites the same for Workloads and CompositePodGroups (which may share a name with
	// a PodGroup).
	made, madeWorkloads, madeComposites *addon.Made
	// deleted holds the objects this process deleted that a finalizer may still hold and the
	// cache may not show deleted yet.
	deleted recentlyDeleted

	warned addon.Told
}

// IndexFields registers the field indexes the reconciler lists by.
func IndexFields(ctx context.Context, mgr ctrl.Manager, installed map[contract.Scheduler]*Backend, composites bool) error {
	objs := []client.Object{&batchv1.Job{}}
	for _, b := range installed {
		objs = append(objs, b.MetaKinds()...)
	}
	if composites {
		objs = append(objs, CompositeMeta())
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
	var kinds, workloads []client.Object
	for _, b := range r.Installed {
		kinds = append(kinds, b.Meta())
		if b.Workload != nil {
			workloads = append(workloads, meta(*b.Workload))
		}
	}
	var err error
	if r.made, err = addon.ObserveMade(ctx, mgr.GetCache(), kinds...); err != nil {
		return err
	}
	if r.madeWorkloads, err = addon.ObserveMade(ctx, mgr.GetCache(), workloads...); err != nil {
		return err
	}
	var composites []client.Object
	if r.Composites {
		composites = append(composites, CompositeMeta())
	}
	if r.madeComposites, err = addon.ObserveMade(ctx, mgr.GetCache(), composites...); err != nil {
		return err
	}
	uses := predicate.NewPredicateFuncs(func(o client.Object) bool {
		js, ok := o.(*jobsetv1alpha2.JobSet)
		return ok && gang.Uses(js)
	})
	b := ctrl.NewControllerManagedBy(mgr).
		Named("podgroups").
		WatchesRawSource(addon.For(mgr, &jobsetv1alpha2.JobSet{}, uses)).
		WatchesRawSource(addon.Watches(mgr, &batchv1.Job{}, handler.EnqueueRequestsFromMapFunc(jobsets.JobSetOf), jobChanged())).
		WithOptions(controller.Options{MaxConcurrentReconciles: concurrency})
	for _, s := range slices.Sorted(maps.Keys(r.Installed)) {
		for _, kind := range r.Installed[s].MetaKinds() {
			b = b.WatchesRawSource(addon.Owns(mgr, &jobsetv1alpha2.JobSet{}, kind, podGroupChanged()))
		}
	}
	if r.Composites {
		b = b.WatchesRawSource(addon.Owns(mgr, &jobsetv1alpha2.JobSet{}, CompositeMeta(), podGroupChanged()))
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

	if s.Composite && !r.Composites {
		r.warnOnce(js, ReasonSchedulerNotInstalled, "not-installed",
			"No PodGroup is made: the JobSet asks for a composite gang and CompositePodGroup (scheduling.k8s.io/v1alpha3) was not served when the podgroups controller started; turn it on and restart the controller")
		return ctrl.Result{}, nil
	}
	want, why, err := r.wanted(ctx, js, gangs)
	if err != nil {
		return ctrl.Result{}, err
	}
	// A composite gang is a CompositePodGroup, made below, and a PodGroup per Job.
	var composite, units []gang.Gang
	for _, g := range gangs {
		_, unwanted := why[g.Name]
		for _, c := range g.Children() {
			if unwanted {
				why[c.Name] = why[g.Name]
			}
		}
	}
	for _, g := range want {
		if len(g.Jobs) > 0 {
			composite = append(composite, g)
			units = append(units, g.Children()...)
			continue
		}
		units = append(units, g)
	}
	made := r.made.PendingNow() // before the cache is read (Made.PendingNow)
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
	if b.Workload != nil && len(want) > 0 {
		// The Workload first: the PodGroups refer to it.
		ok, pending, err := r.ensureWorkload(ctx, js, b, gangs, s)
		waiting = pending
		if err != nil || !ok {
			if err != nil {
				r.Recorder.Eventf(js, nil, corev1.EventTypeWarning, ReasonFailed, actionUpdate, "%v", err)
			}
			return ctrl.Result{}, err
		}
	}
	for _, g := range composite {
		if ok, err := r.ensureComposite(ctx, js, g, s); err != nil || !ok {
			if err != nil {
				r.Recorder.Eventf(js, nil, corev1.EventTypeWarning, ReasonFailed, actionUpdate, "%v", err)
			}
			return ctrl.Result{}, err
		}
	}
	for _, g := range units {
		if r.going(have[g.Name]) {
			// Deleted, held by a finalizer (the Workload API's podgroup-protection, while pods
			// name it): its removal brings the next reconcile, which makes it again.
			delete(have, g.Name)
			continue
		}
		if have[g.Name] == nil && made.Has(types.NamespacedName{Namespace: js.Namespace, Name: g.Name}) {
			// Created by this process, not in the cache yet: its arrival brings the next
			// reconcile, or, should none come, the requeue.
			waiting = true
		} else if err := r.ensure(ctx, js, b, g, s, have[g.Name]); err != nil {
			errList = append(errList, err)
		}
		delete(have, g.Name)
	}
	for _, name := range slices.Sorted(maps.Keys(have)) {
		if r.going(have[name]) {
			continue // deleted already, its finalizer not yet removed
		}
		if err := r.deletePodGroup(ctx, js, b, have[name], why[name]); err != nil {
			errList = append(errList, err)
		}
	}
	if r.Composites && len(errList) == 0 {
		// Composite gangs not wanted (finished), their Jobs' PodGroups gone.
		if err := r.deleteComposites(ctx, js, composite); err != nil {
			errList = append(errList, err)
		}
	}
	if b.Workload != nil && jobsets.Finished(js) && len(errList) == 0 {
		// Its PodGroups gone, the Workload of a finished JobSet goes too.
		if err := r.deleteWorkload(ctx, js, b); err != nil {
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

// written says what write did.
type written int

const (
	unchanged written = iota
	created
	updated
	notOurs
	// replaced: ours, with something the API lets not change (a PodGroup's claims) other than
	// want's; deleted, to be made again once gone.
	replaced
)

// write creates want, or, when have (ours: its metadata from the cache, or nil) carries another
// spec hash than want, brings it to want through adopt, starting from the whole object as the
// apiserver has it; or deletes it when replace (if set) says adopt cannot. kind names the
// object in errors; made remembers what it created.
func (r *Reconciler) write(ctx context.Context, js *jobsetv1alpha2.JobSet, kind string, made *addon.Made, want, have client.Object,
	newObj func() client.Object, adopt func(have, want client.Object), replace func(have, want client.Object) bool) (written, client.Object, error) {
	wantHash := want.GetAnnotations()[contract.PodGroupSpecHashAnnotationKey]
	if have == nil {
		err := r.Client.Create(ctx, want)
		if err == nil {
			made.Created(want)
			return created, want, nil
		}
		if !apierrors.IsAlreadyExists(err) {
			reconcileErrors.WithLabelValues("create").Inc()
			return unchanged, nil, fmt.Errorf("creating %s %s: %w", kind, want.GetName(), err)
		}
		// Ours and not in the cache yet, or someone else's.
		have = newObj()
		if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(want), have); err != nil {
			return unchanged, nil, client.IgnoreNotFound(err)
		}
		if !Ours(have, js) {
			return notOurs, have, nil
		}
	}
	if have.GetAnnotations()[contract.PodGroupSpecHashAnnotationKey] == wantHash {
		return unchanged, have, nil
	}
	if _, meta := have.(*metav1.PartialObjectMetadata); meta {
		// The cache holds metadata only: the update starts from the whole object as it is.
		have = newObj()
		if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(want), have); err != nil {
			return unchanged, nil, client.IgnoreNotFound(err) // deleted meanwhile: the delete event brings us back
		}
		if !Ours(have, js) || have.GetAnnotations()[contract.PodGroupSpecHashAnnotationKey] == wantHash {
			return unchanged, have, nil // changed meanwhile: its event brings us back
		}
	}
	if _, meta := have.(*metav1.PartialObjectMetadata); !meta && replace != nil && replace(have, want) {
		deleted, err := r.remove(ctx, kind, have)
		if !deleted {
			return unchanged, nil, err
		}
		return replaced, have, nil
	}
	patchBase := have.DeepCopyObject().(client.Object)
	adopt(have, want)
	if err := r.Client.Patch(ctx, have, client.MergeFrom(patchBase)); err != nil {
		if apierrors.IsNotFound(err) {
			return unchanged, nil, nil // deleted meanwhile: the delete event brings us back
		}
		reconcileErrors.WithLabelValues("update").Inc()
		return unchanged, nil, fmt.Errorf("updating %s %s: %w", kind, want.GetName(), err)
	}
	return updated, have, nil
}

// ensure creates the gang's PodGroup, or updates ours when the demand changed. have is the
// metadata of ours, from the cache, or nil.
func (r *Reconciler) ensure(ctx context.Context, js *jobsetv1alpha2.JobSet, b *Backend, g gang.Gang, s gang.Settings, have client.Object) error {
	pc, _ := g.PriorityClass(r)
	want := b.Build(js, g, s, pc, r.DefaultQueue)
	did, got, err := r.write(ctx, js, "PodGroup", r.made, want, have, b.New, b.Adopt, b.claimsChanged)
	switch did {
	case created:
		podGroupsCreated.WithLabelValues(string(b.Scheduler)).Inc()
		ctrl.LoggerFrom(ctx).V(1).Info("Created a PodGroup", "podGroup", g.Name, "minMember", g.MinMember)
		r.Recorder.Eventf(js, got, corev1.EventTypeNormal, ReasonCreated, actionCreate,
			"Created %s PodGroup %s: %s", b.Scheduler, g.Name, b.demand(g))
		r.checkTopology(js, b, s, got)
		if b.droppedClaims != nil {
			if why := b.droppedClaims(g, got); why != "" {
				r.warnOnce(js, ReasonClaimsDropped, "claims-dropped", "%s", why)
			}
		}
	case replaced:
		podGroupsDeleted.WithLabelValues(string(b.Scheduler)).Inc()
		r.Recorder.Eventf(js, got, corev1.EventTypeNormal, ReasonDeleted, actionDelete,
			"Deleted %s PodGroup %s to make it again: its claims are not the Job's of restart attempt %d, and a PodGroup's claims cannot change", b.Scheduler, g.Name, js.Status.Restarts)
	case updated:
		podGroupsUpdated.WithLabelValues(string(b.Scheduler)).Inc()
		r.Recorder.Eventf(js, got, corev1.EventTypeNormal, ReasonUpdated, actionUpdate,
			"Updated %s PodGroup %s to the JobSet's demand: %s", b.Scheduler, g.Name, b.demand(g))
		r.checkTopology(js, b, s, got)
	case notOurs:
		r.warnOnce(js, ReasonNameTaken, "name-taken",
			"PodGroup %s exists and is not one podgroups made for this JobSet: it is left alone, and the pods that name it are scheduled against it", g.Name)
	}
	return err
}

// ensureWorkload creates the JobSet's Workload, with a template for every gang, or updates
// ours when a gang's demand changed. ok is false when the PodGroups must not be made: the
// Workload of that name is not ours. pending is true when this process made it and the cache
// does not show it yet.
func (r *Reconciler) ensureWorkload(ctx context.Context, js *jobsetv1alpha2.JobSet, b *Backend, gangs []gang.Gang, s gang.Settings) (ok, pending bool, err error) {
	want, err := b.buildWorkload(js, gangs, s, func(g gang.Gang) string { pc, _ := g.PriorityClass(r); return pc })
	if err != nil {
		return false, false, err
	}
	key := client.ObjectKeyFromObject(want)
	var have client.Object = meta(*b.Workload)
	made := r.madeWorkloads.Pending(key) // before the cache is read (Made.PendingNow)
	if err := r.Client.Get(ctx, key, have); err != nil {
		if !apierrors.IsNotFound(err) {
			return false, false, fmt.Errorf("reading Workload %s: %w", key.Name, err)
		}
		if made {
			return true, true, nil
		}
		have = nil
	} else if !Ours(have, js) {
		have = nil // the cache holds ours only; write reads it again and tells
	} else if r.going(have) {
		return false, false, nil // being deleted: its removal brings the next reconcile
	}
	did, _, err := r.write(ctx, js, "Workload", r.madeWorkloads, want, have, b.newWorkload, b.adoptWorkload, nil)
	templates := len(gangs)
	switch did {
	case created:
		workloadsWritten.WithLabelValues("created").Inc()
		ctrl.LoggerFrom(ctx).V(1).Info("Created a Workload", "workload", key.Name, "templates", templates)
		r.Recorder.Eventf(js, want, corev1.EventTypeNormal, ReasonWorkloadCreated, actionCreate,
			"Created Workload %s: %d PodGroup templates, one per gang", key.Name, templates)
	case updated:
		workloadsWritten.WithLabelValues("updated").Inc()
		r.Recorder.Eventf(js, want, corev1.EventTypeNormal, ReasonWorkloadUpdated, actionUpdate,
			"Updated Workload %s to the JobSet's demand (its templates' minCount)", key.Name)
	case notOurs:
		r.warnOnce(js, ReasonWorkloadNameTaken, "name-taken",
			"Workload %s exists and is not one podgroups made for this JobSet: it is left alone and no PodGroup is made", key.Name)
		return false, false, nil
	}
	return err == nil, false, err
}

// checkTopology warns once when the apiserver dropped the topology the PodGroup was sent with.
func (r *Reconciler) checkTopology(js *jobsetv1alpha2.JobSet, b *Backend, s gang.Settings, got client.Object) {
	if why := b.droppedTopology(s, got); why != "" {
		r.warnOnce(js, ReasonNetworkTopologyDropped, "topology-dropped", "%s", why)
	}
}

// terminating tells whether o (nil: none) was deleted and waits on a finalizer.
func terminating(o client.Object) bool {
	return o != nil && !o.GetDeletionTimestamp().IsZero()
}

// recentlyDeleted remembers, for addon.MadeTTL, the UIDs of the objects this process deleted.
// A PodGroup of the Workload API stays after its deletion while a finalizer (podgroup-protection)
// holds it, and until the cache shows its deletionTimestamp a reconcile would take it for one to
// delete, and delete it, and tell it, again.
type recentlyDeleted struct {
	mu sync.Mutex
	at map[types.UID]time.Time
}

func (d *recentlyDeleted) add(uid types.UID, now time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.at == nil {
		d.at = map[types.UID]time.Time{}
	}
	for u, at := range d.at {
		if now.Sub(at) >= addon.MadeTTL {
			delete(d.at, u)
		}
	}
	d.at[uid] = now
}

func (d *recentlyDeleted) has(uid types.UID, now time.Time) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	at, ok := d.at[uid]
	return ok && now.Sub(at) < addon.MadeTTL
}

// going tells whether o is on its way out: deleted, as the cache shows or as this process did.
func (r *Reconciler) going(o client.Object) bool {
	return terminating(o) || (o != nil && r.deleted.has(o.GetUID(), r.Clock.Now()))
}

// remove deletes one of our objects, with a UID precondition: never a newer one of the name.
// It tells whether it deleted it (not when it was gone already or replaced).
func (r *Reconciler) remove(ctx context.Context, kind string, o client.Object) (bool, error) {
	uid := o.GetUID()
	if err := r.Client.Delete(ctx, o, client.Preconditions{UID: &uid}); err != nil {
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			return false, nil
		}
		reconcileErrors.WithLabelValues("delete").Inc()
		return false, fmt.Errorf("deleting %s %s: %w", kind, o.GetName(), err)
	}
	r.deleted.add(uid, r.Clock.Now())
	return true, nil
}

// deletePodGroup deletes one of our PodGroups.
func (r *Reconciler) deletePodGroup(ctx context.Context, js *jobsetv1alpha2.JobSet, b *Backend, pg client.Object, why string) error {
	deleted, err := r.remove(ctx, "PodGroup", pg)
	if !deleted {
		return err
	}
	if why == "" {
		why = "it is no gang of the JobSet"
	}
	podGroupsDeleted.WithLabelValues(string(b.Scheduler)).Inc()
	ctrl.LoggerFrom(ctx).V(1).Info("Deleted a PodGroup", "podGroup", pg.GetName(), "why", why)
	r.Recorder.Eventf(js, pg, corev1.EventTypeNormal, ReasonDeleted, actionDelete, "Deleted %s PodGroup %s: %s", b.Scheduler, pg.GetName(), why)
	return nil
}

// deleteWorkload deletes the finished JobSet's Workload, if ours is there.
func (r *Reconciler) deleteWorkload(ctx context.Context, js *jobsetv1alpha2.JobSet, b *Backend) error {
	name, err := contract.WorkloadName(js.Name)
	if err != nil {
		return nil // never made
	}
	wl := meta(*b.Workload)
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: js.Namespace, Name: name}, wl); err != nil || !Ours(wl, js) || r.going(wl) {
		return client.IgnoreNotFound(err)
	}
	deleted, err := r.remove(ctx, "Workload", wl)
	if !deleted {
		return err
	}
	workloadsWritten.WithLabelValues("deleted").Inc()
	ctrl.LoggerFrom(ctx).V(1).Info("Deleted a Workload", "workload", name)
	r.Recorder.Eventf(js, wl, corev1.EventTypeNormal, ReasonWorkloadDeleted, actionDelete, "Deleted Workload %s: the JobSet finished", name)
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

// demand is what the gang's PodGroup asks, as its backend's fields say it: the Workload API's
// PodGroup has a gang minCount and no minResources (kube-scheduler sums the pods itself).
func (b *Backend) demand(g gang.Gang) string {
	if b.Scheduler == contract.SchedulerKubernetes {
		return fmt.Sprintf("gang minCount %d", g.MinMember)
	}
	return fmt.Sprintf("minMember %d, minResources %s", g.MinMember, describe(g.MinResources))
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
