package controller

import (
	"context"
	"errors"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/jobset-addons/jobset-addons/pkg/addon"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// Kinds of the objects the add-on writes (jobset_addons_objects_total).
const KindPVC = "PersistentVolumeClaim"

// Kinds is Options.Kinds of the add-on.
var Kinds = []string{KindPVC, "Pod"}

// HeldReason is the reason of jobset_addons_volumeclaims_held_claims: a PVC the add-on deleted
// (retention) that is still Terminating, held by the pods that ran with it.
const HeldReason = "pods"

// registerHeld registers jobset_addons_volumeclaims_held_claims and its _longest_seconds, read
// from the cache at each scrape: the add-on's PVCs being deleted, since their deletion.
func registerHeld(c client.Reader) error {
	w := addon.NewWaits("jobset_addons_volumeclaims_held_claims",
		"PersistentVolumeClaims the add-on deleted that are still Terminating, held by the pods (finished or not) that ran with them.",
		[]string{HeldReason}, func(ctx context.Context) ([]addon.Wait, error) { return held(ctx, c) })
	if err := addon.RegisterWaits(metrics.Registry, "volumeclaims", w); err != nil && !errors.As(err, &prometheus.AlreadyRegisteredError{}) {
		return err
	}
	return nil
}

func held(ctx context.Context, c client.Reader) ([]addon.Wait, error) {
	var pvcs corev1.PersistentVolumeClaimList
	if err := c.List(ctx, &pvcs, client.MatchingLabels{contract.ManagedByLabelKey: contract.VolumeClaimsManagedByValue}, client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	var out []addon.Wait
	for _, p := range pvcs.Items {
		if p.DeletionTimestamp != nil {
			out = append(out, addon.Wait{Reason: HeldReason, Key: p.Namespace + "/" + p.Name, Since: p.DeletionTimestamp.Time})
		}
	}
	return out, nil
}

// Metrics carry bounded labels only: scope (shared, per-pod) and reason, never a JobSet.
var (
	claimsCreated = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "jobset_addons_volumeclaims_created_total",
		Help: "PersistentVolumeClaims created, by scope (shared, per-pod).",
	}, []string{"scope"})
	claimsReused = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "jobset_addons_volumeclaims_reused_total",
		Help: "PersistentVolumeClaims that already existed (retained or pre-created) and were used as they are, by scope.",
	}, []string{"scope"})
	claimsDeleted = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "jobset_addons_volumeclaims_deleted_total",
		Help: "PersistentVolumeClaims deleted by retention (whenComplete, whenFailed), by scope.",
	}, []string{"scope"})
	podsDeleted = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "jobset_addons_volumeclaims_finished_pods_deleted_total",
		Help: "Finished pods deleted because they held PersistentVolumeClaims deleted by retention (finishedPods: Delete).",
	})
	claimsHeld = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "jobset_addons_volumeclaims_held",
		Help: "PersistentVolumeClaims deleted by retention and still Terminating, held by pods that ran with them.",
	})
	claimsExpired = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "jobset_addons_volumeclaims_expired_total",
		Help: "Retained PersistentVolumeClaims deleted because no pod used them for retentionPolicy.expireAfterUnused.",
	})
	nodeLost = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "jobset_addons_volumeclaims_node_lost_total",
		Help: "Per-pod PersistentVolumeClaims whose volume is pinned to a lost node, by what was done (recreated: deleted for a new one, whenNodeLost: Recreate; kept: whenNodeLost: Keep, told once; unreachable: nodes NotReady or unreachable past the grace, data kept, told once; refused: deleting a pod on the node was refused, told once).",
	}, []string{"action"})
	reconcileErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "jobset_addons_volumeclaims_errors_total",
		Help: "Errors, by reason (create, refused, delete, adopt, invalid, list).",
	}, []string{"reason"})
	reconcileDuration = addon.ReconcileDuration("jobset_addons_volumeclaims_reconcile_duration_seconds", "JobSet", 0.001)
)

func init() {
	metrics.Registry.MustRegister(claimsCreated, claimsReused, claimsDeleted, podsDeleted, claimsHeld, claimsExpired, nodeLost, reconcileErrors, reconcileDuration)
}

func scope(shared bool) string {
	if shared {
		return "shared"
	}
	return "per-pod"
}
