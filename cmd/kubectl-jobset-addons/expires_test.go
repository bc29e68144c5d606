package main

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

func TestExpires(t *testing.T) {
	now := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	running := &jobsetv1alpha2.JobSet{}
	done := &jobsetv1alpha2.JobSet{Status: jobsetv1alpha2.JobSetStatus{Conditions: []metav1.Condition{{Type: string(jobsetv1alpha2.JobSetCompleted), Status: metav1.ConditionTrue}}}}
	pvc := func(annotations map[string]string, unusedSince *time.Time) *corev1.PersistentVolumeClaim {
		p := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{UID: "pvc-uid", Annotations: map[string]string{}}}
		for k, v := range annotations {
			p.Annotations[k] = v
		}
		if _, ok := annotations[contract.VolumeClaimFirstSeenAnnotationKey]; !ok {
			p.Annotations[contract.VolumeClaimFirstSeenAnnotationKey] = contract.VolumeClaimFirstSeenValue(now.Add(-24*time.Hour), p.UID)
		}
		if unusedSince != nil {
			p.Status.Conditions = []corev1.PersistentVolumeClaimCondition{{Type: corev1.PersistentVolumeClaimUnused, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(*unusedSince)}}
		}
		return p
	}
	hourAgo := now.Add(-time.Hour)
	exp := map[string]string{contract.VolumeClaimExpireAfterUnusedAnnotationKey: "3h0m0s"}
	for name, tc := range map[string]struct {
		pvc  *corev1.PersistentVolumeClaim
		js   *jobsetv1alpha2.JobSet
		want string
	}{
		"no expiry":              {pvc(nil, &hourAgo), done, "-"},
		"the JobSet runs":        {pvc(exp, &hourAgo), running, "3h0m0s after the JobSet"},
		"in use":                 {pvc(exp, nil), done, "3h0m0s unused"},
		"unused for an hour":     {pvc(exp, &hourAgo), done, "2030-01-01T14:00:00Z (in 2h0m0s)"},
		"unused for longer, due": {pvc(exp, ptrTime(now.Add(-4*time.Hour))), done, "2030-01-01T11:00:00Z (due)"},
		"restored, not yet seen by volumeclaims": {pvc(map[string]string{contract.VolumeClaimExpireAfterUnusedAnnotationKey: "3h0m0s",
			contract.VolumeClaimFirstSeenAnnotationKey: contract.VolumeClaimFirstSeenValue(now.Add(-24*time.Hour), "backed-up-uid")}, ptrTime(now.Add(-4*time.Hour))), done, "3h0m0s unused"},
		"first seen after it turned unused": {pvc(map[string]string{contract.VolumeClaimExpireAfterUnusedAnnotationKey: "3h0m0s",
			contract.VolumeClaimFirstSeenAnnotationKey: contract.VolumeClaimFirstSeenValue(hourAgo, "pvc-uid")}, ptrTime(now.Add(-4*time.Hour))), done, "2030-01-01T14:00:00Z (in 2h0m0s)"},
	} {
		if got := expires(tc.pvc, tc.js, now); got != tc.want {
			t.Errorf("%s: expires = %q, want %q", name, got, tc.want)
		}
	}
	if col := expiryColumn([]corev1.PersistentVolumeClaim{*pvc(nil, nil)}, done, now); col.header != "" {
		t.Errorf("an EXPIRES column without any expiry: %q", col.header)
	}
}

func ptrTime(t time.Time) *time.Time { return &t }
