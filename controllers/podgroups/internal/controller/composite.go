package controller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	schedulingv1alpha3 "k8s.io/api/scheduling/v1alpha3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/controllers/podgroups/internal/gang"
)

// CompositeKind is the kind of a composite gang's CompositePodGroup (scheduling.k8s.io/v1alpha3,
// feature gate CompositePodGroup).
var CompositeKind = schedulingv1alpha3.SchemeGroupVersion.WithKind("CompositePodGroup")

// CompositeMeta is an empty CompositePodGroup's metadata, the form in which the cache holds ours.
func CompositeMeta() *metav1.PartialObjectMetadata { return meta(CompositeKind) }

// ensureComposite creates composite gang g's CompositePodGroup, or tells that its name is
// taken (ok false: no PodGroup of its Jobs is made). Its spec cannot change (every field is
// immutable), so one of ours is only relabelled when its hash differs.
func (r *Reconciler) ensureComposite(ctx context.Context, js *jobsetv1alpha2.JobSet, g gang.Gang, s gang.Settings) (ok bool, err error) {
	pc, _ := g.PriorityClass(r)
	want, err := NativeCompositePodGroup(js, g, s.TopologyKey, pc)
	if err != nil {
		return false, err
	}
	key := client.ObjectKeyFromObject(want)
	var have client.Object = CompositeMeta()
	pending := r.madeComposites.Pending(key) // before the cache is read (Made.PendingNow)
	if err := r.Client.Get(ctx, key, have); err != nil {
		if !apierrors.IsNotFound(err) {
			return false, fmt.Errorf("reading CompositePodGroup %s: %w", key.Name, err)
		}
		if pending {
			return true, nil
		}
		have = nil
	} else if !Ours(have, js) {
		have = nil // the cache holds ours only; write reads it again and tells
	} else if r.going(have) {
		return false, nil // being deleted: its removal brings the next reconcile
	}
	did, _, err := r.write(ctx, js, "CompositePodGroup", r.madeComposites, want, have,
		func() client.Object { return &schedulingv1alpha3.CompositePodGroup{} }, adoptMeta, nil)
	switch did {
	case created:
		ctrl.LoggerFrom(ctx).V(1).Info("Created a CompositePodGroup", "compositePodGroup", g.Name, "jobs", len(g.Jobs))
		r.Recorder.Eventf(js, want, corev1.EventTypeNormal, ReasonCompositeCreated, actionCreate,
			"Created CompositePodGroup %s: all of its %d Jobs or none, each Job a PodGroup of its own", g.Name, len(g.Jobs))
	case notOurs:
		r.warnOnce(js, ReasonNameTaken, "name-taken",
			"CompositePodGroup %s exists and is not one podgroups made for this JobSet: it is left alone and no PodGroup of its Jobs is made", g.Name)
		return false, nil
	}
	return err == nil, err
}

// deleteComposites deletes the JobSet's CompositePodGroups of ours that are not of a wanted
// composite gang (the JobSet finished).
func (r *Reconciler) deleteComposites(ctx context.Context, js *jobsetv1alpha2.JobSet, wanted []gang.Gang) error {
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(CompositeKind.GroupVersion().WithKind(CompositeKind.Kind + "List"))
	if err := r.Client.List(ctx, list, client.InNamespace(js.Namespace), client.MatchingFields{JobSetNameIndex: js.Name}); err != nil {
		reconcileErrors.WithLabelValues("list").Inc()
		return fmt.Errorf("listing CompositePodGroups: %w", err)
	}
	keep := map[string]bool{}
	for _, g := range wanted {
		keep[g.Name] = true
	}
	for i := range list.Items {
		cpg := &list.Items[i]
		if keep[cpg.Name] || !Ours(cpg, js) || r.going(cpg) {
			continue
		}
		deleted, err := r.remove(ctx, "CompositePodGroup", cpg)
		if err != nil {
			return err
		}
		if deleted {
			r.Recorder.Eventf(js, cpg, corev1.EventTypeNormal, ReasonCompositeDeleted, actionDelete, "Deleted CompositePodGroup %s: the JobSet finished", cpg.Name)
		}
	}
	return nil
}
