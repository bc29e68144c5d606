package controller

import (
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/jobset-addons/jobset-addons/pkg/addon/addontest"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// TestPodsRefused: a refusal concerns volumeclaims only when it names, whole, a PVC the Job's
// pods mount: the shared one, or a per-pod one of that Job.
func TestPodsRefused(t *testing.T) {
	js := addontest.JobSet("ns", "train").VolumeClaimsPolicies(`[
		{templates: [{metadata: {name: data}, spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}}]},
		{targetReplicatedJobs: [w], templates: [{metadata: {name: ckpt}, spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}}]}]`).
		ReplicatedJobs(addontest.ReplicatedJob("w").Replicas(2).Completions(12).Mount("data", "ckpt"), addontest.ReplicatedJob("x").Mount("data")).Obj()
	job := func(rj, index string) *batchv1.Job {
		return &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "train-" + rj + "-" + index, Labels: map[string]string{
			contract.ReplicatedJobNameLabelKey: rj, contract.JobIndexLabelKey: index,
		}}}
	}
	const forbidden = `Error creating: pods "train-w-1-11-abcde" is forbidden: ValidatingAdmissionPolicy 'p' with binding 'p' denied request: `
	for _, tc := range []struct {
		name     string
		job      *batchv1.Job
		message  string
		wantWhat string // "" when it does not concern the add-on
	}{
		{"per-pod PVC of the Job", job("w", "1"), forbidden + "claim ckpt-train-w-1-11 is not allowed.", "the per-pod PersistentVolumeClaim ckpt-train-w-1-11 (template ckpt)"},
		{"shared PVC", job("x", "0"), forbidden + "claims data-train, scratch are not allowed", "the shared PersistentVolumeClaim data-train (template data)"},
		{"per-pod PVC of another Job", job("w", "0"), forbidden + "claim ckpt-train-w-1-11 is not allowed", ""},
		{"per-pod PVC of a ReplicatedJob the policy does not target", job("x", "1"), forbidden + "claim ckpt-train-x-1-0", ""},
		{"a longer name that starts with a PVC's", job("x", "0"), forbidden + "claim data-train-other is not allowed", ""},
		{"not a completion index", job("w", "1"), forbidden + "claim ckpt-train-w-1-01 and ckpt-train-w-1-x", ""},
		{"nothing of the add-on's", job("w", "1"), forbidden + "minimum cpu usage per Container is 100m", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			what, ok := PodsRefused(js, tc.job, tc.message)
			if ok != (tc.wantWhat != "") || what != tc.wantWhat {
				t.Errorf("PodsRefused = %q, %v; want %q", what, ok, tc.wantWhat)
			}
		})
	}
	if _, ok := PodsRefused(addontest.JobSet("ns", "train").Obj(), job("x", "0"), forbidden+"claim data-train"); ok {
		t.Error("a JobSet without policies: concerns the add-on")
	}
}
