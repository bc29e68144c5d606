package controller

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/controllers/podgroups/internal/backend"
	"github.com/jobset-addons/jobset-addons/pkg/addon"
	"github.com/jobset-addons/jobset-addons/pkg/addon/checks/podgroups"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// ensure creates the gang's PodGroup, or updates ours when the demand changed. have is the
// metadata of ours, from the cache, or nil.
func (r *Reconciler) ensure(ctx context.Context, js *jobsetv1alpha2.JobSet, p plan, g podgroups.Gang, have client.Object) error {
	b := p.backend
	want := b.Build(js, g, p.settings, r.priorityClass(g), r.DefaultQueue)
	k := kind[client.Object]{name: "PodGroup", made: r.made, first: r.first("PodGroup"), newObj: b.NewPodGroup, adopt: b.Adopt, replace: b.NeedsReplace}
	did, got, err := write(ctx, r, js, k, want, have)
	scheduler := string(b.Scheduler())
	switch did {
	case created, madeFirst:
		podGroupsCreated.WithLabelValues(scheduler).Inc()
		ctrl.LoggerFrom(ctx).V(1).Info("Created a PodGroup", "podGroup", g.Name, "minMember", g.MinMember)
		addon.Tell(r.Recorder, js, got, corev1.EventTypeNormal, ReasonCreated, actionCreate,
			"Created %s PodGroup %s: %s", scheduler, g.Name, b.Demand(g))
		r.tellDropped(js, b.Dropped(p.settings, g, got), true)
		r.tellMissing(ctx, js, b, want)
	case replaced:
		podGroupsDeleted.WithLabelValues(scheduler).Inc()
		addon.Tell(r.Recorder, js, got, corev1.EventTypeNormal, ReasonDeleted, actionDelete,
			"Deleted %s PodGroup %s to make it again: its claims are not the Job's of restart attempt %d, and a PodGroup's claims cannot change", scheduler, g.Name, js.Status.Restarts)
	case updated:
		podGroupsUpdated.WithLabelValues(scheduler).Inc()
		addon.Tell(r.Recorder, js, got, corev1.EventTypeNormal, ReasonUpdated, actionUpdate,
			"Updated %s PodGroup %s to the JobSet's demand: %s", scheduler, g.Name, b.Demand(g))
		r.tellDropped(js, b.Dropped(p.settings, g, got), false)
		r.tellMissing(ctx, js, b, want)
	case notOurs:
		if foreign(js, got) {
			break // told by taken
		}
		r.warnOnce(js, ReasonNameTaken, "name-taken",
			"PodGroup %s exists and is not one podgroups made for this JobSet: it is left alone, and the pods that name it are scheduled against it", g.Name)
	}
	return err
}

// tellDropped warns once of what the apiserver dropped of a PodGroup: its topology, and, when
// it was just created, its claims.
func (r *Reconciler) tellDropped(js *jobsetv1alpha2.JobSet, d backend.Dropped, created bool) {
	if d.Topology != "" {
		r.warnOnce(js, ReasonNetworkTopologyDropped, "topology-dropped", "%s", d.Topology)
	}
	if created && d.Claims != "" {
		r.warnOnce(js, ReasonClaimsDropped, "claims-dropped", "%s", d.Claims)
	}
}

// tellMissing warns once of what a PodGroup just made or changed needs and lacks
// (backend.Prerequisites); a failure to read it is logged.
func (r *Reconciler) tellMissing(ctx context.Context, js *jobsetv1alpha2.JobSet, b backend.Backend, pg client.Object) {
	p, ok := b.(backend.Prerequisites)
	if !ok {
		return
	}
	reason, msg, err := p.Missing(ctx, r.APIReader, pg)
	switch {
	case err != nil:
		ctrl.LoggerFrom(ctx).Error(err, "Could not check what the PodGroup needs", "podGroup", pg.GetName())
	case reason != "":
		r.warnOnce(js, reason, "prerequisite-missing", "%s", msg)
	}
}

// deletePodGroup deletes one of our PodGroups, not wanted for reason why.
func (r *Reconciler) deletePodGroup(ctx context.Context, js *jobsetv1alpha2.JobSet, b backend.Backend, pg client.Object, why string) error {
	if r.madeUnseen(js, "PodGroup", ReasonCreated, string(b.Scheduler())+" PodGroup", pg) {
		podGroupsCreated.WithLabelValues(string(b.Scheduler())).Inc()
	}
	deleted, err := r.remove(ctx, "PodGroup", pg)
	if !deleted {
		return err
	}
	if why == "" {
		why = "it is no gang of the JobSet"
	}
	podGroupsDeleted.WithLabelValues(string(b.Scheduler())).Inc()
	ctrl.LoggerFrom(ctx).V(1).Info("Deleted a PodGroup", "podGroup", pg.GetName(), "why", why)
	addon.Tell(r.Recorder, js, pg, corev1.EventTypeNormal, ReasonDeleted, actionDelete, "Deleted %s PodGroup %s: %s", b.Scheduler(), pg.GetName(), why)
	return nil
}

// madeUnseen tells obj, of kind, as created (reason, what names it), once, when the Job webhook
// made it and no reconcile found it while it was wanted: the JobSet finished before the
// reconciler ran (a restart, leader election), and obj is about to be deleted. It says whether it
// told.
func (r *Reconciler) madeUnseen(js *jobsetv1alpha2.JobSet, kind, reason, what string, obj client.Object) bool {
	if !r.first(kind).Tell(js.UID, obj) {
		return false
	}
	addon.CountObject(kind, addon.ActionCreated, 1)
	addon.Tell(r.Recorder, js, obj, corev1.EventTypeNormal, reason, actionCreate,
		"Created %s %s: made by the Job webhook as the Job came, before the controller reconciled the JobSet", what, obj.GetName())
	return true
}

// foreign tells whether got, an object of one of the JobSet's gang names that is not ours, is
// another JobSet's (backend.Identity), as Reconciler.taken tells it.
func foreign(js *jobsetv1alpha2.JobSet, got client.Object) bool {
	return got != nil && backend.Identity(js, got.GetLabels()).Of(got) == contract.Foreign
}
