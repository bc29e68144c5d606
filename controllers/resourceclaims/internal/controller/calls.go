package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"

	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/controllers/resourceclaims/internal/claims"
	"github.com/jobset-addons/jobset-addons/pkg/addon"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// create creates a claim. One that exists already is ours for this owner or made ahead for
// this JobSet (the cache was behind: nothing to do), ours for an earlier owner of the same
// name for the same Job index and template (deleted, to be made again), or not ours, or ours
// for another Job (left alone, and told).
func (r *Reconciler) create(ctx context.Context, js *jobsetv1alpha2.JobSet, a action, out *outcome) {
	// The cache lists only the JobSet's own claims by label: one of the name made for another
	// JobSet's Job is looked up by name, as a create would say so only once the API server
	// lets it through (a quota refuses it first).
	if found := (&resourcev1.ResourceClaim{}); r.Client.Get(ctx, client.ObjectKeyFromObject(a.create), found) == nil &&
		claims.Identity(a.create).Of(found) == contract.Foreign {
		r.decide(ctx, js, a, found, out)
		return
	}
	err := r.Client.Create(ctx, a.create)
	if err == nil {
		r.made.Created(a.create)
		r.first.Made(js.UID, a.create.Name)
		claimsCreated.Inc()
		addon.CountObject(KindClaim, addon.ActionCreated, 1)
		out.add(a.jobName, "created", a.create.Name, nil)
		return
	}
	if addon.NamespaceTerminating(err) {
		return // the JobSet goes with its namespace
	}
	if addon.Classify(err) == addon.Refused {
		reconcileErrors.WithLabelValues("refused").Inc()
		addon.CountObject(KindClaim, addon.ActionFailed, 1)
		out.refused.Add(a.create.Labels[contract.ResourceClaimTemplateLabelKey], a.create.Name, err)
		out.refusedJobs.Store(a.create.Name, a.jobName)
		return
	}
	if !apierrors.IsAlreadyExists(err) {
		reconcileErrors.WithLabelValues("create").Inc()
		addon.CountObject(KindClaim, addon.ActionFailed, 1)
		out.add(a.jobName, "failed", a.create.Name, fmt.Errorf("creating %s: %w", a.create.Name, err))
		return
	}
	r.exists(ctx, js, a, out)
}

// exists decides about a claim of a.create's name that exists already: whose it is
// (contract.Identity.Of) says whether it is left alone and told, taken as made, or deleted as
// left by an earlier owner.
func (r *Reconciler) exists(ctx context.Context, js *jobsetv1alpha2.JobSet, a action, out *outcome) {
	found := &resourcev1.ResourceClaim{}
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(a.create), found); err != nil {
		reconcileErrors.WithLabelValues("create").Inc()
		out.add(a.jobName, "failed", a.create.Name, fmt.Errorf("reading %s, which exists: %w", a.create.Name, err))
		return
	}
	r.decide(ctx, js, a, found, out)
}

// decide is what exists decides of found, the claim of a.create's name.
func (r *Reconciler) decide(ctx context.Context, js *jobsetv1alpha2.JobSet, a action, found *resourcev1.ResourceClaim, out *outcome) {
	switch {
	case found.Labels[contract.ManagedByLabelKey] != contract.ResourceClaimsManagedByValue:
		claimsSkipped.WithLabelValues("name-taken").Inc()
		if r.told.Once(a.create.OwnerReferences[0].UID, ReasonNameTaken+"/"+found.Name) { // by its Job: a user's claim is not in the cache
			out.add(a.jobName, "taken", found.Name, nil)
		}
	case controlledBy(found, a.create.OwnerReferences[0].UID):
		// Made by an earlier reconcile that the cache does not show yet.
		r.made.Created(found)
	case controlledBy(found, js.UID):
		// Made ahead of this Job; the reconcile that the cache's catching up brings adopts it.
		r.made.Created(found)
	case claims.Identity(a.create).Of(found) == contract.Foreign:
		// Ours, made for another Job (names are joined with "-": Job a-w-0's template 1-gpu
		// and Job a-w-0-1's gpu give one name), which may be using it: left alone, and told.
		claimsSkipped.WithLabelValues("name-taken").Inc()
		r.waiting.For(client.ObjectKeyFromObject(js), found)
		if r.told.Once(a.create.OwnerReferences[0].UID, ReasonNameTaken+"/"+found.Name) {
			out.add(a.jobName, "foreign", found.Name+" (made for "+claims.Identity(a.create).Holder(found)+")", nil)
		}
	default:
		// Ours, left by an earlier Job or JobSet of the same name: it goes, and the claim is
		// made again once the watch sees it gone. Until then the Job's pods wait for it.
		if found.DeletionTimestamp.IsZero() {
			if err := r.Client.Delete(ctx, found, client.Preconditions{UID: &found.UID}); client.IgnoreNotFound(err) != nil {
				reconcileErrors.WithLabelValues("delete").Inc()
				out.add(a.jobName, "failed", found.Name, fmt.Errorf("deleting %s, left by an earlier owner: %w", found.Name, err))
				return
			}
			claimsDeleted.WithLabelValues("stale").Inc()
			addon.CountObject(KindClaim, addon.ActionDeleted, 1)
			out.add(a.jobName, "deleted", found.Name, nil)
		}
	}
}

// delete deletes a claim (its UID as precondition); one gone already counts as deleted.
func (r *Reconciler) delete(ctx context.Context, a action, out *outcome) {
	err := r.Client.Delete(ctx, a.delete, client.Preconditions{UID: &a.delete.UID})
	if err != nil && !apierrors.IsNotFound(err) {
		reconcileErrors.WithLabelValues("delete").Inc()
		addon.CountObject(KindClaim, addon.ActionFailed, 1)
		out.add(a.jobName, "failed", a.delete.Name, fmt.Errorf("deleting %s: %w", a.delete.Name, err))
		return
	}
	r.changed.Wrote(a.delete)
	claimsDeleted.WithLabelValues(a.cause).Inc()
	addon.CountObject(KindClaim, addon.ActionDeleted, 1)
	out.add(a.jobName, "deleted", a.delete.Name, nil)
}

// adopt makes a claim made ahead of its Job the Job's: its only owner becomes the Job. A JSON
// patch tests the owners first, so that it applies only to owners as they were seen; the
// claim's status, which the scheduler and the kubelet change, does not get in the way.
func (r *Reconciler) adopt(ctx context.Context, a action, out *outcome) {
	ops := []map[string]any{
		{"op": "test", "path": "/metadata/ownerReferences", "value": a.adopt.OwnerReferences},
		{"op": "replace", "path": "/metadata/ownerReferences", "value": []metav1.OwnerReference{claims.JobOwner(a.job)}},
	}
	data, err := json.Marshal(ops)
	if err == nil {
		err = r.Adopter.Patch(ctx, a.adopt.DeepCopy(), client.RawPatch(types.JSONPatchType, data))
	}
	if apierrors.IsInvalid(err) {
		// The test failed: the cache showed owners the claim no longer has. Adopted already
		// (by an earlier reconcile the cache has not caught up with) is what was wanted.
		found := &resourcev1.ResourceClaim{}
		if getErr := r.APIReader.Get(ctx, client.ObjectKeyFromObject(a.adopt), found); getErr == nil && controlledBy(found, a.job.UID) {
			return
		}
	}
	if err != nil {
		reconcileErrors.WithLabelValues("adopt").Inc()
		addon.CountObject(KindClaim, addon.ActionFailed, 1)
		out.add(a.jobName, "failed", a.adopt.Name, fmt.Errorf("adopting %s for its Job: %w", a.adopt.Name, err))
		return
	}
	r.changed.Wrote(a.adopt)
	claimsAdopted.Inc()
	addon.CountObject(KindClaim, addon.ActionUpdated, 1)
	if ref := metav1.GetControllerOfNoCopy(a.adopt); ref != nil && r.first.Tell(ref.UID, a.adopt) {
		// Made ahead by the Job webhook, for a Job that came first: told as created now.
		claimsCreated.Inc()
		out.add(a.jobName, "created", a.adopt.Name, nil)
	}
}

// controlledBy tells whether o's controller has the UID uid.
func controlledBy(o metav1.Object, uid types.UID) bool {
	ref := metav1.GetControllerOf(o)
	return ref != nil && ref.UID == uid
}

func sorted(s []string) []string {
	sort.Strings(s)
	return s
}
