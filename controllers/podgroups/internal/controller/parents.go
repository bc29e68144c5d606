package controller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/controllers/podgroups/internal/backend"
	"github.com/jobset-addons/jobset-addons/pkg/addon"
	"github.com/jobset-addons/jobset-addons/pkg/addon/checks/podgroups"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// The parents of PodGroups, which they refer to and which are made before them: the Workload of
// a backends.Workloads backend, and the CompositePodGroup of each composite gang.

// ensureParents makes the parents of the wanted gangs' PodGroups. ok is false when these must
// not be made (a parent's name is taken, or it is being deleted); waiting is true when this
// process made the Workload and the cache does not show it yet.
func (r *Reconciler) ensureParents(ctx context.Context, js *jobsetv1alpha2.JobSet, p plan, w wants) (ok, waiting bool, err error) {
	if wb, is := p.backend.(backend.Workloads); is && len(w.gangs) > 0 {
		if ok, waiting, err = r.ensureWorkload(ctx, js, wb, p); err != nil || !ok {
			return false, waiting, err
		}
	}
	for _, g := range w.composites {
		if ok, err := r.ensureComposite(ctx, js, p.backend.(backend.Composites), g, p.settings); err != nil || !ok {
			return false, waiting, err
		}
	}
	return true, waiting, nil
}

// ensureWorkload creates the JobSet's Workload, with a template for every gang, or updates
// ours when a gang's demand changed. ok is false when the PodGroups must not be made: the
// Workload of that name is not ours. pending is true when this process made it and the cache
// does not show it yet.
func (r *Reconciler) ensureWorkload(ctx context.Context, js *jobsetv1alpha2.JobSet, wb backend.Workloads, p plan) (ok, pending bool, err error) {
	want, err := wb.BuildWorkload(js, p.gangs, p.settings, r.priorityClass)
	if err != nil {
		return false, false, err
	}
	have, pending, going, err := r.cached(ctx, js, "Workload", wb.WorkloadKind(), r.madeWorkloads, want)
	if err != nil || going || pending {
		return pending, pending, err
	}
	k := kind[*schedulingv1beta1.Workload]{name: "Workload", made: r.madeWorkloads, first: r.first("Workload"), adopt: wb.AdoptWorkload,
		newObj: func() *schedulingv1beta1.Workload { return &schedulingv1beta1.Workload{} }}
	did, got, err := write(ctx, r, js, k, want, have)
	switch did {
	case created, madeFirst:
		workloadsWritten.WithLabelValues("created").Inc()
		ctrl.LoggerFrom(ctx).V(1).Info("Created a Workload", "workload", want.Name, "templates", len(p.gangs))
		addon.Tell(r.Recorder, js, want, corev1.EventTypeNormal, ReasonWorkloadCreated, actionCreate,
			"Created Workload %s: %d PodGroup templates, one per gang", want.Name, len(p.gangs))
	case updated:
		workloadsWritten.WithLabelValues("updated").Inc()
		addon.Tell(r.Recorder, js, want, corev1.EventTypeNormal, ReasonWorkloadUpdated, actionUpdate,
			"Updated Workload %s to the JobSet's demand (its templates' minCount)", want.Name)
	case notOurs:
		if foreign(js, got) {
			return false, false, nil // told by taken
		}
		r.warnOnce(js, ReasonWorkloadNameTaken, "name-taken",
			"Workload %s exists and is not one podgroups made for this JobSet: it is left alone and no PodGroup is made", want.Name)
		return false, false, nil
	case namespaceGoing:
		return false, false, nil
	}
	return err == nil, false, err
}

// ensureComposite creates composite gang g's CompositePodGroup, or tells that its name is
// taken (ok false: no PodGroup of its Jobs is made). Its spec cannot change (every field is
// immutable), so one of ours is only relabelled when its hash differs.
func (r *Reconciler) ensureComposite(ctx context.Context, js *jobsetv1alpha2.JobSet, cb backend.Composites, g podgroups.Gang, s podgroups.Settings) (ok bool, err error) {
	cpg, err := cb.BuildComposite(js, g, s, r.priorityClass(g))
	if err != nil {
		return false, err
	}
	want, err := backend.CompositeObject(cpg, r.CompositeKind)
	if err != nil {
		return false, err
	}
	have, pending, going, err := r.cached(ctx, js, "CompositePodGroup", r.CompositeKind, r.madeComposites, want)
	if err != nil || going || pending {
		return pending, err
	}
	k := kind[*unstructured.Unstructured]{name: "CompositePodGroup", made: r.madeComposites, first: r.first("CompositePodGroup"),
		newObj: func() *unstructured.Unstructured {
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(r.CompositeKind)
			return u
		},
		adopt: func(have, want *unstructured.Unstructured) { backend.AdoptMeta(have, want) }}
	did, got, err := write(ctx, r, js, k, want, have)
	switch did {
	case created, madeFirst:
		ctrl.LoggerFrom(ctx).V(1).Info("Created a CompositePodGroup", "compositePodGroup", g.Name, "jobs", len(g.Jobs))
		addon.Tell(r.Recorder, js, want, corev1.EventTypeNormal, ReasonCompositeCreated, actionCreate,
			"Created CompositePodGroup %s: all of its %d Jobs or none, each Job a PodGroup of its own", g.Name, len(g.Jobs))
	case notOurs:
		if foreign(js, got) {
			return false, nil // told by taken
		}
		r.warnOnce(js, ReasonNameTaken, "name-taken",
			"CompositePodGroup %s exists and is not one podgroups made for this JobSet: it is left alone and no PodGroup of its Jobs is made", g.Name)
		return false, nil
	case namespaceGoing:
		return false, nil
	}
	return err == nil, err
}

// cached is our object of want's name and kind gvk as the cache shows it (its metadata), or nil
// when the cache shows none of ours (write then creates it, or reads it and tells whose it
// is); pending when this process made it and the cache does not show it yet, going when it is
// being deleted (its removal brings the next reconcile).
func (r *Reconciler) cached(ctx context.Context, js *jobsetv1alpha2.JobSet, kind string, gvk schema.GroupVersionKind, made *addon.Made, want client.Object) (have client.Object, pending, going bool, err error) {
	key := client.ObjectKeyFromObject(want)
	have = backend.Meta(gvk)
	pending = made.Pending(key) // before the cache is read (Made.PendingNow)
	if err := r.Client.Get(ctx, key, have); err != nil {
		if !apierrors.IsNotFound(err) {
			return nil, false, false, fmt.Errorf("reading %s %s: %w", kind, key.Name, err)
		}
		return nil, pending, false, nil
	}
	if !backend.Ours(have, js) {
		return nil, false, false, nil // the cache holds ours only
	}
	return have, false, r.going(have), nil
}

// deleteWorkload deletes the finished JobSet's Workload, if ours is there.
func (r *Reconciler) deleteWorkload(ctx context.Context, js *jobsetv1alpha2.JobSet, wb backend.Workloads) error {
	name, err := contract.WorkloadName(js.Name)
	if err != nil {
		return nil // never made
	}
	wl := backend.Meta(wb.WorkloadKind())
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: js.Namespace, Name: name}, wl); err != nil || !backend.Ours(wl, js) || r.going(wl) {
		return client.IgnoreNotFound(err)
	}
	if r.madeUnseen(js, "Workload", ReasonWorkloadCreated, "Workload", wl) {
		workloadsWritten.WithLabelValues("created").Inc()
	}
	deleted, err := r.remove(ctx, "Workload", wl)
	if !deleted {
		return err
	}
	workloadsWritten.WithLabelValues("deleted").Inc()
	ctrl.LoggerFrom(ctx).V(1).Info("Deleted a Workload", "workload", name)
	addon.Tell(r.Recorder, js, wl, corev1.EventTypeNormal, ReasonWorkloadDeleted, actionDelete, "Deleted Workload %s: the JobSet finished", name)
	return nil
}

// deleteComposites deletes the JobSet's CompositePodGroups of ours that are not of a wanted
// composite gang (the JobSet finished), but those kept for now (keptWhileEarly).
func (r *Reconciler) deleteComposites(ctx context.Context, js *jobsetv1alpha2.JobSet, w wants) (kept bool, _ error) {
	list := backend.MetaList(r.CompositeKind)
	if err := r.Client.List(ctx, list, client.InNamespace(js.Namespace), client.MatchingFields{JobSetNameIndex: js.Name}); err != nil {
		reconcileErrors.WithLabelValues("list").Inc()
		return false, fmt.Errorf("listing CompositePodGroups: %w", err)
	}
	keep := map[string]bool{}
	for _, g := range w.composites {
		keep[g.Name] = true
	}
	for i := range list.Items {
		cpg := &list.Items[i]
		if keep[cpg.Name] || !backend.Ours(cpg, js) || r.going(cpg) {
			continue
		}
		if r.keptWhileEarly(w, cpg) {
			kept = true
			continue
		}
		r.madeUnseen(js, "CompositePodGroup", ReasonCompositeCreated, "CompositePodGroup", cpg)
		deleted, err := r.remove(ctx, "CompositePodGroup", cpg)
		if err != nil {
			return kept, err
		}
		if deleted {
			addon.Tell(r.Recorder, js, cpg, corev1.EventTypeNormal, ReasonCompositeDeleted, actionDelete, "Deleted CompositePodGroup %s: the JobSet finished", cpg.Name)
		}
	}
	return kept, nil
}
