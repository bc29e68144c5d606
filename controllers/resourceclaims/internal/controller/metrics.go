package controller

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
	resourcev1 "k8s.io/api/resource/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/jobset-addons/jobset-addons/pkg/addon"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// KindClaim is the kind of the objects the add-on writes (jobset_addons_objects_total).
const KindClaim = "ResourceClaim"

// Kinds is Options.Kinds of the add-on.
var Kinds = []string{KindClaim}

// WaitReason is the reason of jobset_addons_jobsets_waiting: a JobSet with a claim the add-on
// made that is not allocated yet (its pods wait for it).
const WaitReason = "claim"

// Waits is Options.Waits: the JobSets with a claim of the add-on not allocated, from the claim's
// creation.
func Waits(ctx context.Context, c client.Reader) ([]addon.Wait, error) {
	var list resourcev1.ResourceClaimList
	if err := c.List(ctx, &list, client.MatchingLabels{contract.ManagedByLabelKey: contract.ResourceClaimsManagedByValue}, client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	var out []addon.Wait
	for _, cl := range list.Items {
		if cl.Status.Allocation == nil && cl.DeletionTimestamp == nil {
			out = append(out, addon.Wait{Reason: WaitReason, Key: cl.Namespace + "/" + cl.Labels[contract.JobSetNameLabelKey], Since: cl.CreationTimestamp.Time})
		}
	}
	return out, nil
}

// Metrics carry bounded labels only, never a JobSet or a Job.
var (
	claimsCreated = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "jobset_addons_resourceclaims_created_total",
		Help: "ResourceClaims created for Jobs.",
	})
	claimsAdopted = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "jobset_addons_resourceclaims_adopted_total",
		Help: "ResourceClaims made ahead of their Job (owned by the JobSet) that their Job then adopted.",
	})
	claimsDeleted = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "jobset_addons_resourceclaims_deleted_total",
		Help: "ResourceClaims deleted, by cause (finished: the Job finished and the template says Delete; stale: left by an earlier owner of the same name; unused: made ahead for a Job that will not come).",
	}, []string{"cause"})
	claimsSkipped = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "jobset_addons_resourceclaims_skipped_total",
		Help: "Claims not made for a Job, by reason (shadowed: the pod template's own claim wins; name-taken: a claim that is not ours has the name).",
	}, []string{"reason"})
	reconcileErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "jobset_addons_resourceclaims_errors_total",
		Help: "Errors, by reason (adopt, create, refused, delete, invalid, list).",
	}, []string{"reason"})
	reconcileDuration = addon.ReconcileDuration("jobset_addons_resourceclaims_reconcile_duration_seconds", "JobSet", 0.001)
)

func init() {
	metrics.Registry.MustRegister(claimsCreated, claimsAdopted, claimsDeleted, claimsSkipped, reconcileErrors, reconcileDuration)
}
