package controller

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// TestClaimChanged: the binding's updates of a PVC do not reconcile its JobSet; a change of its
// labels, owners, deletion or the add-on's annotations does.
func TestClaimChanged(t *testing.T) {
	base := func() *corev1.PersistentVolumeClaim {
		return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{
			Namespace: "ns", Name: "data-train-w-0-0",
			Labels:      map[string]string{contract.ManagedByLabelKey: contract.VolumeClaimsManagedByValue, contract.JobSetNameLabelKey: "train"},
			Annotations: map[string]string{contract.VolumeClaimJobSetUIDAnnotationKey: "uid-1"},
		}}
	}
	for _, tc := range []struct {
		name   string
		change func(*corev1.PersistentVolumeClaim)
		want   bool
	}{
		{"provisioner named", func(p *corev1.PersistentVolumeClaim) {
			p.Annotations["volume.kubernetes.io/storage-provisioner"] = "kubernetes.io/host-path"
		}, false},
		{"bound", func(p *corev1.PersistentVolumeClaim) {
			p.Annotations["pv.kubernetes.io/bind-completed"] = "yes"
			p.Spec.VolumeName = "pvc-1"
			p.Status.Phase = corev1.ClaimBound
		}, false},
		{"a label", func(p *corev1.PersistentVolumeClaim) { p.Labels["team"] = "a" }, true},
		{"an owner", func(p *corev1.PersistentVolumeClaim) {
			p.OwnerReferences = []metav1.OwnerReference{{Kind: "JobSet", Name: "train", UID: "uid-1"}}
		}, true},
		{"deleted", func(p *corev1.PersistentVolumeClaim) { p.DeletionTimestamp = &metav1.Time{Time: time.Now()} }, true},
		{"the add-on's annotation", func(p *corev1.PersistentVolumeClaim) {
			p.Annotations[contract.VolumeClaimUnusedSinceAnnotationKey] = "2026-01-01T00:00:00Z"
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			old, cur := base(), base()
			tc.change(cur)
			if got := claimChanged().Update(event.UpdateEvent{ObjectOld: old, ObjectNew: cur}); got != tc.want {
				t.Errorf("reconcile the JobSet: %v, want %v", got, tc.want)
			}
		})
	}
	if !claimChanged().Create(event.CreateEvent{Object: base()}) || !claimChanged().Delete(event.DeleteEvent{Object: base()}) {
		t.Error("a PVC's creation and deletion must reconcile its JobSet")
	}
}
