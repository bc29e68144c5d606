package main

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// expiryCol is the EXPIRES column of the PVCs, there only when one of them has an expiry.
type expiryCol struct {
	header string
	cell   func(*corev1.PersistentVolumeClaim) string
}

func expiryColumn(pvcs []corev1.PersistentVolumeClaim, js *jobsetv1alpha2.JobSet, now time.Time) expiryCol {
	for i := range pvcs {
		if _, ok := pvcs[i].Annotations[contract.VolumeClaimExpireAfterUnusedAnnotationKey]; ok {
			return expiryCol{"EXPIRES\t", func(p *corev1.PersistentVolumeClaim) string { return expires(p, js, now) + "\t" }}
		}
	}
	return expiryCol{"", func(*corev1.PersistentVolumeClaim) string { return "" }}
}

// expires says when a PVC with retentionPolicy.expireAfterUnused is deleted: "-" without an
// expiry; while the JobSet runs, "<d> after the JobSet" (its PVCs never expire while it runs);
// while a pod uses the PVC, "<d> unused"; else the time, and how far off it is.
func expires(pvc *corev1.PersistentVolumeClaim, js *jobsetv1alpha2.JobSet, now time.Time) string {
	after, ok := pvc.Annotations[contract.VolumeClaimExpireAfterUnusedAnnotationKey]
	switch {
	case !ok || pvc.DeletionTimestamp != nil:
		return "-"
	case !apimeta.IsStatusConditionTrue(js.Status.Conditions, string(jobsetv1alpha2.JobSetCompleted)) &&
		!apimeta.IsStatusConditionTrue(js.Status.Conditions, string(jobsetv1alpha2.JobSetFailed)):
		return after + " after the JobSet"
	}
	at, _, ok := contract.VolumeClaimExpiry(pvc)
	if !ok {
		return after + " unused"
	}
	if d := at.Sub(now); d > 0 {
		return at.UTC().Format(time.RFC3339) + " (in " + d.Round(time.Second).String() + ")"
	}
	return at.UTC().Format(time.RFC3339) + " (due)"
}
