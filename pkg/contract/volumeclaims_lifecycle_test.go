package contract

import (
	"maps"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func defaultGrace() *metav1.Duration {
	return &metav1.Duration{Duration: DefaultVolumeNodeLostGracePeriod}
}

func TestParseLifecycle(t *testing.T) {
	value := "- targetReplicatedJobs: [w]\n  templates: [" + okPVC + "]\n" +
		"  retentionPolicy: {whenDeleted: Retain, expireAfterUnused: 72h, whenNodeLost: Recreate, nodeLostGracePeriod: 30s}\n"
	pols, errs := ParseVolumeClaimPolicies(value, JobSetAnnotationPath(PoliciesAnnotationKey))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	r := pols[0].RetentionPolicy
	if r.ExpireAfterUnused == nil || r.ExpireAfterUnused.Duration != 72*time.Hour {
		t.Errorf("expireAfterUnused = %v, want 72h", r.ExpireAfterUnused)
	}
	if r.WhenNodeLost != NodeLostRecreate || r.NodeLostGracePeriod.Duration != 30*time.Second {
		t.Errorf("whenNodeLost = %q, grace %v; want Recreate, 30s", r.WhenNodeLost, r.NodeLostGracePeriod)
	}
	if r.WhenNodeUnreachable != NodeLostKeep {
		t.Errorf("whenNodeUnreachable = %q, want the default Keep", r.WhenNodeUnreachable)
	}
	value = "- targetReplicatedJobs: [w]\n  templates: [" + okPVC + "]\n  retentionPolicy: {whenNodeLost: Recreate, whenNodeUnreachable: Recreate}\n"
	if pols, errs = ParseVolumeClaimPolicies(value, JobSetAnnotationPath(PoliciesAnnotationKey)); len(errs) > 0 || pols[0].RetentionPolicy.WhenNodeUnreachable != NodeLostRecreate {
		t.Errorf("whenNodeUnreachable: Recreate: %v, %v", pols, errs)
	}
}

func TestInvalidLifecycle(t *testing.T) {
	rp := pol + "[0].retentionPolicy"
	cases := map[string]struct {
		value    string
		wantErrs []fieldErr
	}{
		"expireAfterUnused not a duration": {
			"- templates: [" + okPVC + "]\n  retentionPolicy: {expireAfterUnused: 3days}\n",
			[]fieldErr{{invalid, rp + ".expireAfterUnused"}},
		},
		"expireAfterUnused zero": {
			"- templates: [" + okPVC + "]\n  retentionPolicy: {expireAfterUnused: 0s}\n",
			[]fieldErr{{invalid, rp + ".expireAfterUnused"}},
		},
		"expireAfterUnused with nothing retained": {
			"- templates: [" + okPVC + "]\n  retentionPolicy: {whenComplete: Delete, whenFailed: Delete, expireAfterUnused: 1h}\n",
			[]fieldErr{{invalid, rp + ".expireAfterUnused"}},
		},
		"whenNodeLost not Recreate or Keep": {
			"- targetReplicatedJobs: [w]\n  templates: [" + okPVC + "]\n  retentionPolicy: {whenNodeLost: Delete}\n",
			[]fieldErr{{notSupported, rp + ".whenNodeLost"}},
		},
		"whenNodeLost Recreate on shared PVCs": {
			"- templates: [" + okPVC + "]\n  retentionPolicy: {whenNodeLost: Recreate}\n",
			[]fieldErr{{invalid, rp + ".whenNodeLost"}},
		},
		"nodeLostGracePeriod not a duration": {
			"- targetReplicatedJobs: [w]\n  templates: [" + okPVC + "]\n  retentionPolicy: {nodeLostGracePeriod: soon}\n",
			[]fieldErr{{invalid, rp + ".nodeLostGracePeriod"}},
		},
		"whenNodeUnreachable not Recreate or Keep": {
			"- targetReplicatedJobs: [w]\n  templates: [" + okPVC + "]\n  retentionPolicy: {whenNodeLost: Recreate, whenNodeUnreachable: Delete}\n",
			[]fieldErr{{notSupported, rp + ".whenNodeUnreachable"}},
		},
		"whenNodeUnreachable Recreate without whenNodeLost Recreate": {
			"- targetReplicatedJobs: [w]\n  templates: [" + okPVC + "]\n  retentionPolicy: {whenNodeUnreachable: Recreate}\n",
			[]fieldErr{{invalid, rp + ".whenNodeUnreachable"}},
		},
		"nodeLostGracePeriod negative": {
			"- targetReplicatedJobs: [w]\n  templates: [" + okPVC + "]\n  retentionPolicy: {nodeLostGracePeriod: -1m}\n",
			[]fieldErr{{invalid, rp + ".nodeLostGracePeriod"}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, errs := ParseVolumeClaimPolicies(tc.value, JobSetAnnotationPath(PoliciesAnnotationKey))
			if diff := cmp.Diff(tc.wantErrs, errsOf(errs)); diff != "" {
				t.Errorf("errors (-want +got):\n%s\ngot: %v", diff, errs.ToAggregate())
			}
		})
	}
}

func TestVolumeClaimExpiry(t *testing.T) {
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	unused := func(status corev1.ConditionStatus, at time.Time) []corev1.PersistentVolumeClaimCondition {
		return []corev1.PersistentVolumeClaimCondition{{Type: corev1.PersistentVolumeClaimUnused, Status: status, LastTransitionTime: metav1.NewTime(at)}}
	}
	cases := map[string]struct {
		annotations map[string]string
		conditions  []corev1.PersistentVolumeClaimCondition
		want        time.Time
		ok          bool
	}{
		"no expiry": {nil, unused(corev1.ConditionTrue, t0), time.Time{}, false},
		"unused since t0": {map[string]string{VolumeClaimExpireAfterUnusedAnnotationKey: "1h"},
			unused(corev1.ConditionTrue, t0), t0.Add(time.Hour), true},
		"in use": {map[string]string{VolumeClaimExpireAfterUnusedAnnotationKey: "1h"},
			unused(corev1.ConditionFalse, t0), time.Time{}, false},
		"reused after it turned unused: the clock restarts": {map[string]string{
			VolumeClaimExpireAfterUnusedAnnotationKey: "1h", VolumeClaimClaimedAtAnnotationKey: t0.Add(time.Minute).Format(time.RFC3339)},
			unused(corev1.ConditionTrue, t0), t0.Add(time.Hour + time.Minute), true},
		"no condition: the add-on's own clock": {map[string]string{
			VolumeClaimExpireAfterUnusedAnnotationKey: "1h", VolumeClaimUnusedSinceAnnotationKey: t0.Format(time.RFC3339)},
			nil, t0.Add(time.Hour), true},
		"no condition, no clock yet": {map[string]string{VolumeClaimExpireAfterUnusedAnnotationKey: "1h"}, nil, time.Time{}, false},
		"the condition wins over the own clock": {map[string]string{
			VolumeClaimExpireAfterUnusedAnnotationKey: "1h", VolumeClaimUnusedSinceAnnotationKey: t0.Format(time.RFC3339)},
			unused(corev1.ConditionFalse, t0), time.Time{}, false},
		"first seen after it turned unused: the clock starts at the first sight": {map[string]string{
			VolumeClaimExpireAfterUnusedAnnotationKey: "1h", VolumeClaimUnusedSinceAnnotationKey: t0.Format(time.RFC3339),
			VolumeClaimFirstSeenAnnotationKey: VolumeClaimFirstSeenValue(t0.Add(24*time.Hour), "pvc-uid")},
			nil, t0.Add(25 * time.Hour), true},
		"never seen: no clock yet": {map[string]string{
			VolumeClaimExpireAfterUnusedAnnotationKey: "1h", VolumeClaimUnusedSinceAnnotationKey: t0.Format(time.RFC3339),
			VolumeClaimFirstSeenAnnotationKey: ""},
			nil, time.Time{}, false},
		"restored: first seen names another object, no clock yet": {map[string]string{
			VolumeClaimExpireAfterUnusedAnnotationKey: "1h", VolumeClaimUnusedSinceAnnotationKey: t0.Format(time.RFC3339),
			VolumeClaimFirstSeenAnnotationKey: VolumeClaimFirstSeenValue(t0, "backed-up-uid")},
			unused(corev1.ConditionTrue, t0), time.Time{}, false},
		"first seen unreadable": {map[string]string{
			VolumeClaimExpireAfterUnusedAnnotationKey: "1h", VolumeClaimFirstSeenAnnotationKey: "yesterday pvc-uid"},
			unused(corev1.ConditionTrue, t0), time.Time{}, false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			// Seen by volumeclaims long before, unless the case says otherwise.
			annotations := map[string]string{VolumeClaimFirstSeenAnnotationKey: VolumeClaimFirstSeenValue(t0.Add(-24*time.Hour), "pvc-uid")}
			maps.Copy(annotations, tc.annotations)
			maps.DeleteFunc(annotations, func(_, v string) bool { return v == "" })
			pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{UID: "pvc-uid", Annotations: annotations}}
			pvc.Status.Conditions = tc.conditions
			got, _, ok := VolumeClaimExpiry(pvc)
			if ok != tc.ok || !got.Equal(tc.want) {
				t.Errorf("VolumeClaimExpiry = %v, %v; want %v, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}
