package controller

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/pkg/addon"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// expire deletes a PVC whose expiry passed, unless a pod uses it after all (the Unused
// condition may lag), and tells so on the PVC and on its JobSet, if there is one. The delete is
// conditional on the PVC being the one looked at, unchanged: a JobSet that took it in between
// (and restarted its clock) keeps it.
func (e *Expiry) expire(ctx context.Context, pvc *corev1.PersistentVolumeClaim, js *jobsetv1alpha2.JobSet, since time.Time) (ctrl.Result, error) {
	users, holders, err := podsOf(ctx, e.Reader, pvc)
	if err != nil {
		return ctrl.Result{}, err
	}
	if len(users) > 0 {
		ctrl.LoggerFrom(ctx).V(2).Info("Expired PVC in use, kept", "pvc", pvc.Name, "pods", users)
		return ctrl.Result{RequeueAfter: ownClockRecheck}, nil
	}
	uid, rv := pvc.UID, pvc.ResourceVersion
	err = e.Client.Delete(ctx, pvc, client.Preconditions{UID: &uid, ResourceVersion: &rv})
	switch {
	case apierrors.IsNotFound(err):
		return ctrl.Result{}, nil
	case apierrors.IsConflict(err):
		return ctrl.Result{Requeue: true}, nil
	case err != nil:
		reconcileErrors.WithLabelValues("delete").Inc()
		addon.CountObject(KindPVC, addon.ActionFailed, 1)
		return ctrl.Result{}, fmt.Errorf("deleting expired %s: %w", pvc.Name, err)
	}
	claimsExpired.Inc()
	addon.CountObject(KindPVC, addon.ActionDeleted, 1)
	note := expiredNote(pvc, since, e.now(), holders)
	ctrl.LoggerFrom(ctx).Info("Deleted an expired PVC", "pvc", pvc.Name, "unusedSince", since)
	e.Recorder.Eventf(pvc, nil, corev1.EventTypeNormal, ReasonExpired, actionDelete, "%s", addon.CutNote(note))
	if js != nil {
		addon.Tell(e.Recorder, js, claimRef(js, pvc.Name), corev1.EventTypeNormal, ReasonExpired, actionDelete, "PersistentVolumeClaim %s: %s", pvc.Name, note)
	}
	return ctrl.Result{}, nil
}

// expiredNote says why an expired PVC was deleted, and what still holds it.
func expiredNote(pvc *corev1.PersistentVolumeClaim, since, now time.Time, holders []string) string {
	note := fmt.Sprintf("Deleted: no pod used it for %s (since %s), and retentionPolicy.expireAfterUnused is %s; its data is gone",
		now.Sub(since).Round(time.Second), since.UTC().Format(time.RFC3339), pvc.Annotations[contract.VolumeClaimExpireAfterUnusedAnnotationKey])
	if len(holders) > 0 {
		note += fmt.Sprintf("; it stays Terminating, its storage held, while the %s that ran with it exist (%s)",
			plural(len(holders), "finished pod"), names(holders))
	}
	return strings.TrimSpace(note)
}
