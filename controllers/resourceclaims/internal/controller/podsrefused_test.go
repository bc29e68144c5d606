package controller

import (
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// TestPodsRefused: a refusal concerns resourceclaims only when it names, whole, a claim the
// Job's templates give its pods, of the Job's restart attempt, and not one a pod-level claim
// shadows.
func TestPodsRefused(t *testing.T) {
	job := func(attempt string, podClaims ...corev1.PodResourceClaim) *batchv1.Job {
		return &batchv1.Job{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "train-w-0",
				Labels: map[string]string{contract.RestartAttemptLabelKey: attempt},
				Annotations: map[string]string{contract.TemplatesAnnotationKey: `[
					{metadata: {name: gpu}, spec: {devices: {requests: [{name: g, exactly: {deviceClassName: c}}]}}},
					{metadata: {name: nic}, spec: {devices: {requests: [{name: net, exactly: {deviceClassName: c}}]}}}]`}},
			Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{ResourceClaims: podClaims}}},
		}
	}
	const forbidden = `Error creating: pods "train-w-0-0-abcde" is forbidden: ValidatingAdmissionPolicy 'p' with binding 'p' denied request: `
	for _, tc := range []struct {
		name     string
		job      *batchv1.Job
		message  string
		wantWhat string // "" when it does not concern the add-on
	}{
		{"claim of the Job", job("0"), forbidden + "claims train-w-0-nic may not be used here.", "the ResourceClaim train-w-0-nic (template nic)"},
		{"claim of the Job's restart attempt", job("2"), forbidden + "claim train-w-0-r2-gpu", "the ResourceClaim train-w-0-r2-gpu (template gpu)"},
		{"claim of an earlier attempt", job("2"), forbidden + "claim train-w-0-gpu", ""},
		{"shadowed by the pod's own claim", job("0", corev1.PodResourceClaim{Name: "gpu", ResourceClaimName: ptr.To("mine")}), forbidden + "claim train-w-0-gpu", ""},
		{"a longer name", job("0"), forbidden + "claim train-w-0-gpu-2", ""},
		{"nothing of the add-on's", job("0"), forbidden + "minimum cpu usage per Container is 100m", ""},
		{"a Job without templates", &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "train-w-0"}}, forbidden + "claim train-w-0-gpu", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			what, ok := PodsRefused(nil, tc.job, tc.message)
			if ok != (tc.wantWhat != "") || what != tc.wantWhat {
				t.Errorf("PodsRefused = %q, %v; want %q", what, ok, tc.wantWhat)
			}
		})
	}
}
