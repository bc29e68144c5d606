package controller

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/controllers/podgroups/internal/backend"
	"github.com/jobset-addons/jobset-addons/pkg/addon"
	"github.com/jobset-addons/jobset-addons/pkg/addon/checks/podgroups"
	"github.com/jobset-addons/jobset-addons/pkg/addon/jobsets"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// Reconcile brings the JobSet's PodGroups to what its gangs, stages and state ask for: it loads
// the JobSet and what it asks for, says which gangs are wanted now, makes their parents (the
// Workload, the CompositePodGroups) and then their PodGroups, deletes what is no longer wanted,
// and tells what failed.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, err error) {
	start := r.Clock.Now()
	defer func() { addon.ObserveReconcile(reconcileDuration, r.Clock.Since(start), err) }()
	ctx, js, ok, err := addon.ReconcileJobSet(ctx, r.Client, req.NamespacedName)
	if !ok || !podgroups.Uses(js) {
		if js != nil {
			r.warned.Forget(js.UID)
		}
		if err == nil {
			r.waiting.Forget(req.NamespacedName)
			r.retry.Forget(req.NamespacedName)
		}
		return ctrl.Result{}, err
	}
	p, ok := r.plan(js)
	if !ok {
		return ctrl.Result{}, nil
	}
	w, err := r.wants(ctx, js, p.gangs)
	if err != nil {
		return ctrl.Result{}, err
	}
	taken := r.taken(ctx, js, p)
	made := r.made.PendingNow() // before the cache is read (Made.PendingNow)
	have, err := r.podGroups(ctx, js, p.backend)
	if err != nil {
		return ctrl.Result{}, err
	}
	ok, waiting, err := r.ensureParents(ctx, js, p, w)
	if err != nil || !ok {
		return whileTaken(taken, ctrl.Result{}), r.failed(js, err)
	}
	pending, errs := r.ensureGangs(ctx, js, p, w, have, made)
	kept, errs := r.deleteStale(ctx, js, p, w, have, errs)
	if !taken && len(errs) == 0 {
		if err := r.retryHeld(ctx, js); err != nil {
			errs = append(errs, err)
		}
	}
	res, err := r.finish(js, waiting || pending, errs)
	if kept && (res.RequeueAfter == 0 || res.RequeueAfter > EarlyGrace) {
		res.RequeueAfter = EarlyGrace
	}
	return whileTaken(taken, res), err
}

// TakenRequeue is how often a JobSet one of whose gang objects another JobSet holds is
// reconciled again, besides at once when that object is deleted (taken): should the deletion
// come between the reconcile's read and its record, its gang is still made soon after.
const TakenRequeue = 5 * time.Second

// whileTaken is res, requeued within TakenRequeue while a gang object is taken.
func whileTaken(taken bool, res ctrl.Result) ctrl.Result {
	if taken && (res.RequeueAfter == 0 || res.RequeueAfter > TakenRequeue) {
		res.RequeueAfter = TakenRequeue
	}
	return res
}

// taken tells, once per object and holder, of each of the JobSet's gang objects (its Workload,
// CompositePodGroups and PodGroups, wanted now or later) that the cache shows made for another
// JobSet (backend.Identity: names are joined with "-"), and whether there is one. Such an object
// is never changed or used: the Job webhook holds the Jobs whose pods it would gang. Its
// deletion reconciles the JobSet at once (r.waiting), which makes its gang and has JobSet retry
// the held Jobs (retryHeld).
func (r *Reconciler) taken(ctx context.Context, js *jobsetv1alpha2.JobSet, p plan) bool {
	taken := false
	for _, o := range backend.Objects(p.backend, js, p.gangs, r.CompositeKind) {
		obj := backend.Meta(o.Kind)
		holder := addon.ForeignHolder(ctx, r.Client, client.ObjectKey{Namespace: js.Namespace, Name: o.Name}, obj, o.Identity)
		if holder == "" {
			continue
		}
		taken = true
		r.waiting.For(client.ObjectKeyFromObject(js), obj)
		if !r.warned.Once(js.UID, "taken\x00"+o.Kind.Kind+"/"+o.Name+"\x00"+holder) {
			continue
		}
		reconcileErrors.WithLabelValues("name-taken").Inc()
		reason := ReasonNameTaken
		if o.Kind.Kind == "Workload" {
			reason = ReasonWorkloadNameTaken
		}
		addon.Tell(r.Recorder, js, nil, corev1.EventTypeWarning, reason, actionSkip,
			"%s. It is left alone, and the Jobs whose pods it would gang are held (not created or resumed) until it is gone; then the gang is made and the Jobs go on",
			"T"+strings.TrimPrefix(addon.Taken(o.What, holder), "t"))
	}
	return taken
}

// retryHeld has JobSet create (or resume) now the Jobs the Job webhook held while a gang
// object of theirs was another JobSet's: once none is (taken) and the JobSet's own gang objects
// are made, a JobSet whose object went (r.retry, by its deletion; or r.waiting, when the
// deletion came before the record) gets PodGroupsRetryAnnotationKey (addon.Retries), not left
// to JobSet's back-off.
func (r *Reconciler) retryHeld(ctx context.Context, js *jobsetv1alpha2.JobSet) error {
	key := client.ObjectKeyFromObject(js)
	if r.waiting.Forget(key) {
		r.retry.Add(reconcile.Request{NamespacedName: key})
	}
	if err := r.retry.Retry(ctx, r.Client, js, contract.PodGroupsRetryAnnotationKey); err != nil {
		reconcileErrors.WithLabelValues("retry").Inc()
		return err
	}
	return nil
}

// plan is what a reconcile works from: the JobSet's settings, its gangs and their backend.
type plan struct {
	settings podgroups.Settings
	gangs    []podgroups.Gang
	backend  backend.Backend
}

// plan reads the JobSet (podgroups.Read) and finds its backend; ok is false, and it is told once,
// when no PodGroup can be made: invalid settings or gangs, a backend or kind not served, or a
// JobSet the mutating webhook did not see.
func (r *Reconciler) plan(js *jobsetv1alpha2.JobSet) (p plan, ok bool) {
	s, gangs, errs := podgroups.Read(js)
	if len(errs.Settings) > 0 {
		r.warnOnce(js, ReasonInvalid, "invalid", "No PodGroup is made: %v", errs.Settings.ToAggregate())
		return p, false
	}
	b := r.Installed[s.Scheduler]
	if b == nil {
		r.warnOnce(js, ReasonSchedulerNotInstalled, "not-installed",
			"No PodGroup is made: the %s PodGroup CRD (%s) was not served when the podgroups controller started; install it and restart the controller",
			s.Scheduler, r.Backends.For(s.Scheduler).Kind().GroupVersion())
		return p, false
	}
	invalid := errs.Gangs
	if len(invalid) == 0 {
		invalid = b.Validate(js, s, gangs)
	}
	if len(invalid) > 0 {
		r.warnOnce(js, ReasonInvalid, "invalid", "No PodGroup is made: %v", invalid.ToAggregate())
		return p, false
	}
	if !backend.Admitted(b, js, gangs) {
		why := "The JobSet was created while the podgroups webhook was not running"
		if _, prunable := b.(backend.Restorer); prunable {
			why += ", or this cluster's JobSet CRD dropped spec.schedulingGroup, where the webhook names the gang (JobSet before v0.12.0: the kubernetes scheduler needs JobSet v0.12.0 or later)"
		}
		r.warnOnce(js, ReasonNotAdmitted, "not-admitted", "%s: its pods name no PodGroup and are not gang-scheduled; re-create the JobSet", why)
		return p, false
	}
	if _, can := b.(backend.Composites); s.Composite && (!can || !r.composites()) {
		r.warnOnce(js, ReasonSchedulerNotInstalled, "not-installed",
			"No PodGroup is made: the JobSet asks for a composite gang and CompositePodGroup (scheduling.k8s.io/v1beta1 or v1alpha3) was not served when the podgroups controller started; turn it on and restart the controller")
		return p, false
	}
	return plan{settings: s, gangs: gangs, backend: b}, true
}

// podGroups are the JobSet's PodGroups of ours, by name, as the cache holds them.
func (r *Reconciler) podGroups(ctx context.Context, js *jobsetv1alpha2.JobSet, b backend.Backend) (map[string]client.Object, error) {
	list := backend.MetaList(b.Kind())
	if err := r.Client.List(ctx, list, client.InNamespace(js.Namespace), client.MatchingFields{JobSetNameIndex: js.Name}); err != nil {
		reconcileErrors.WithLabelValues("list").Inc()
		return nil, fmt.Errorf("listing PodGroups: %w", err)
	}
	have := map[string]client.Object{}
	for i := range list.Items {
		if pg := &list.Items[i]; backend.Ours(pg, js) {
			have[pg.GetName()] = pg
		}
	}
	return have, nil
}

// ensureGangs makes or updates the PodGroup of each wanted unit, and takes it out of have.
// pending is true when one this process made is not in the cache yet (made).
func (r *Reconciler) ensureGangs(ctx context.Context, js *jobsetv1alpha2.JobSet, p plan, w wants, have map[string]client.Object, made sets.Set[types.NamespacedName]) (pending bool, errs []error) {
	for _, g := range w.units {
		switch {
		case r.going(have[g.Name]):
			// Deleted, held by a finalizer (the Workload API's podgroup-protection, while pods
			// name it): its removal brings the next reconcile, which makes it again.
		case have[g.Name] == nil && made.Has(types.NamespacedName{Namespace: js.Namespace, Name: g.Name}):
			// Created by this process, not in the cache yet: its arrival brings the next
			// reconcile, or, should none come, the requeue.
			pending = true
		default:
			if err := r.ensure(ctx, js, p, g, have[g.Name]); err != nil {
				errs = append(errs, err)
			}
		}
		delete(have, g.Name)
	}
	return pending, errs
}

// deleteStale deletes our PodGroups left in have (not wanted), and, when all went well so far,
// the CompositePodGroups not wanted and the Workload of a finished JobSet, after their PodGroups.
// kept is true when it left one for now (keptWhileEarly): the reconcile is requeued.
func (r *Reconciler) deleteStale(ctx context.Context, js *jobsetv1alpha2.JobSet, p plan, w wants, have map[string]client.Object, errs []error) (kept bool, _ []error) {
	for _, name := range slices.Sorted(maps.Keys(have)) {
		if r.going(have[name]) {
			continue // deleted already, its finalizer not yet removed
		}
		if r.keptWhileEarly(w, have[name]) {
			kept = true
			continue
		}
		if err := r.deletePodGroup(ctx, js, p.backend, have[name], w.why[name]); err != nil {
			errs = append(errs, err)
		}
	}
	if _, ok := p.backend.(backend.Composites); ok && r.composites() && len(errs) == 0 {
		k, err := r.deleteComposites(ctx, js, w)
		if err != nil {
			errs = append(errs, err)
		}
		kept = kept || k
	}
	if wb, ok := p.backend.(backend.Workloads); ok && jobsets.Finished(js) && len(errs) == 0 {
		if err := r.deleteWorkload(ctx, js, wb); err != nil {
			errs = append(errs, err)
		}
	}
	return kept, errs
}

// EarlyGrace is how long a gang object of a stage whose Jobs the cache does not show yet
// (wants.early) is kept: the Job webhook made it as upstream created the stage's first Job, and
// that Job comes into the cache within moments. Should none come (another webhook refused the
// Job after ours made the gang), the gang object goes after this, and is made again with the
// Job's next create.
const EarlyGrace = 30 * time.Second

// keptWhileEarly tells whether obj, a gang object not wanted now, is kept for now: its stage's
// Jobs are not in the cache yet (wants.early) and it is younger than EarlyGrace.
func (r *Reconciler) keptWhileEarly(w wants, obj client.Object) bool {
	return w.early.Has(obj.GetName()) && r.Clock.Since(obj.GetCreationTimestamp().Time) < EarlyGrace
}

// finish tells what failed, and requeues when the cache has yet to show what was made.
func (r *Reconciler) finish(js *jobsetv1alpha2.JobSet, waiting bool, errs []error) (ctrl.Result, error) {
	if err := r.failed(js, errors.Join(errs...)); err != nil {
		return ctrl.Result{}, err
	}
	if waiting {
		return ctrl.Result{RequeueAfter: addon.MadeTTL}, nil
	}
	return ctrl.Result{}, nil
}

// failed tells err (if any) as a Warning on the JobSet, and returns it (the reconcile is retried
// with back-off). A create the API server refuses for good is told as such (ReasonRefused).
func (r *Reconciler) failed(js *jobsetv1alpha2.JobSet, err error) error {
	switch {
	case err == nil:
	case addon.Classify(err) == addon.Refused:
		reconcileErrors.WithLabelValues("refused").Inc()
		addon.Tell(r.Recorder, js, nil, corev1.EventTypeWarning, ReasonRefused, actionCreate,
			"The API server refuses the JobSet's gang objects and will go on refusing them as they are: %v. "+
				"Its pods are not gang-scheduled until it accepts them; the JobSet is not failed (JobSet owns its status). Retried with back-off", err)
	default:
		addon.Tell(r.Recorder, js, nil, corev1.EventTypeWarning, ReasonFailed, actionUpdate, "%v", err)
	}
	return err
}

func (r *Reconciler) warnOnce(js *jobsetv1alpha2.JobSet, reason, metricReason, format string, args ...any) {
	if r.warned.Warn(r.Recorder, js, nil, reason, actionSkip, format, args...) {
		reconcileErrors.WithLabelValues(metricReason).Inc()
	}
}
