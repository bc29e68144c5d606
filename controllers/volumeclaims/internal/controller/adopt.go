package controller

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/pkg/addon/checks/volumeclaims"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// adopt makes an existing PVC of the add-on's the JobSet's, and tells whether an earlier JobSet
// of the same name left it (fromEarlier): an owner reference to js for whenDeleted Delete; the
// JobSet's UID and the time it took the PVC, which restarts the expiry clock
// (contract.VolumeClaimExpiry); and the expiry of js's policy, which from now on is the one
// that counts. Nothing is written, or copied, when all of that is there already: cached is
// the cache's object, which adopt never changes.
func (r *Reconciler) adopt(ctx context.Context, js *jobsetv1alpha2.JobSet, c volumeclaims.Claim, cached *corev1.PersistentVolumeClaim) (fromEarlier bool, err error) {
	fromEarlier = cached.Annotations[contract.VolumeClaimJobSetUIDAnnotationKey] != string(js.UID)
	owner := c.Retention.WhenDeleted == contract.RetentionPolicyDelete && !ownedBy(cached, js)
	expiry, expires := volumeclaims.ExpiryAnnotation(c.Retention)
	if v, ok := cached.Annotations[contract.VolumeClaimExpireAfterUnusedAnnotationKey]; !fromEarlier && !owner && ok == expires && v == expiry {
		return false, nil // cached is the cache's own: read, never written
	}
	before := cached.DeepCopy()
	pvc := before.DeepCopy()
	if owner {
		pvc.OwnerReferences = append(pvc.OwnerReferences, volumeclaims.OwnerReference(js))
	}
	if pvc.Annotations == nil {
		pvc.Annotations = map[string]string{}
	}
	if fromEarlier {
		pvc.Annotations[contract.VolumeClaimJobSetUIDAnnotationKey] = string(js.UID)
		pvc.Annotations[contract.VolumeClaimClaimedAtAnnotationKey] = time.Now().UTC().Format(time.RFC3339)
		delete(pvc.Annotations, contract.VolumeClaimUnusedSinceAnnotationKey)
	}
	if expires {
		pvc.Annotations[contract.VolumeClaimExpireAfterUnusedAnnotationKey] = expiry
	} else {
		delete(pvc.Annotations, contract.VolumeClaimExpireAfterUnusedAnnotationKey)
	}
	if equalMeta(before, pvc) {
		return fromEarlier, nil
	}
	return fromEarlier, r.Client.Patch(ctx, pvc, client.MergeFrom(before))
}

func equalMeta(a, b *corev1.PersistentVolumeClaim) bool {
	if len(a.OwnerReferences) != len(b.OwnerReferences) || len(a.Annotations) != len(b.Annotations) {
		return false
	}
	for k, v := range a.Annotations {
		if w, ok := b.Annotations[k]; !ok || w != v {
			return false
		}
	}
	return true
}
