package controller

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/pkg/addon/checks/volumeclaims"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// TestScaledDown: the per-pod PVCs of completion indexes a lowering of completions took away
// (JobSet's ElasticJobSet: 4 → 2 here) are kept while their ReplicatedJob runs, never made
// again, and deleted with the ReplicatedJob's other PVCs by whenComplete: Delete.
func TestScaledDown(t *testing.T) {
	const deleteOnComplete = `[{targetReplicatedJobs: [w], templates: [{metadata: {name: ckpt}, spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}}], retentionPolicy: {whenComplete: Delete}},
 {templates: [{metadata: {name: data}, spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}}]}]`
	// The JobSet as it was made (completions 4) and as it is now (2).
	at := func(completions int32) *jobsetv1alpha2.JobSet {
		js := jobSet(true).VolumeClaimsPolicies(deleteOnComplete).Obj()
		js.Spec.ReplicatedJobs[0].Template.Spec.Completions = ptr.To(completions)
		return js
	}
	pvcsOf := func(js *jobsetv1alpha2.JobSet) []client.Object {
		ps, _, errs := volumeclaims.Parse(js)
		if len(errs) > 0 {
			t.Fatal(errs)
		}
		claims, _ := volumeclaims.Claims(js, ps)
		var out []client.Object
		for _, c := range claims {
			out = append(out, c.PVC(js))
		}
		return out
	}
	four := []string{"ckpt-train-w-0-0", "ckpt-train-w-0-1", "ckpt-train-w-0-2", "ckpt-train-w-0-3",
		"ckpt-train-w-1-0", "ckpt-train-w-1-1", "ckpt-train-w-1-2", "ckpt-train-w-1-3", "data-train"}
	succeeded := func(js *jobsetv1alpha2.JobSet) *jobsetv1alpha2.JobSet {
		js.Status.ReplicatedJobsStatus = []jobsetv1alpha2.ReplicatedJobStatus{{Name: "w", Succeeded: 2}}
		return js
	}

	t.Run("running: the removed indexes' PVCs are kept", func(t *testing.T) {
		claims, reasons := run(t, append([]client.Object{at(2)}, pvcsOf(at(4))...)...)
		if diff := cmp.Diff(four, claims); diff != "" {
			t.Errorf("PVCs (-want +got):\n%s", diff)
		}
		if len(reasons) != 0 {
			t.Errorf("events %q, want none", reasons)
		}
	})
	t.Run("w succeeded: whenComplete Delete deletes every index's PVC, the removed ones too", func(t *testing.T) {
		claims, reasons := run(t, append([]client.Object{succeeded(at(2))}, pvcsOf(at(4))...)...)
		if diff := cmp.Diff([]string{"data-train"}, claims); diff != "" {
			t.Errorf("PVCs (-want +got):\n%s", diff)
		}
		if len(reasons) != 1 || !strings.HasPrefix(reasons[0], "Normal VolumeClaimsDeleted Deleted 8 PersistentVolumeClaims by retention") {
			t.Errorf("events %q, want one VolumeClaimsDeleted of 8", reasons)
		}
	})
	t.Run("a smaller re-run: an earlier JobSet's PVCs of indexes it does not run are left as they are", func(t *testing.T) {
		earlier := pvcsOf(at(4))
		for _, o := range earlier {
			o.GetAnnotations()[contract.VolumeClaimJobSetUIDAnnotationKey] = "uid-0"
			o.SetOwnerReferences(nil) // whenDeleted: Retain
		}
		objs := append([]client.Object{succeeded(at(2))}, earlier...)
		claims, reasons := run(t, objs...)
		want := []string{"ckpt-train-w-0-2", "ckpt-train-w-0-3", "ckpt-train-w-1-2", "ckpt-train-w-1-3", "data-train"}
		if diff := cmp.Diff(want, claims); diff != "" {
			t.Errorf("PVCs (-want +got):\n%s", diff)
		}
		if len(reasons) != 2 || !strings.HasPrefix(reasons[1], "Normal VolumeClaimsDeleted Deleted 4 PersistentVolumeClaims by retention") {
			t.Errorf("events %q, want the reuse and one VolumeClaimsDeleted of the 4 it mounts", reasons)
		}
	})
	t.Run("a PVC of the labels but not the name is not taken for an index", func(t *testing.T) {
		odd := pvcsOf(at(4))[3] // ckpt-train-w-0-3, its labels kept
		odd.SetName("ckpt-train-w-0-3-copy")
		claims, _ := run(t, succeeded(at(2)), odd)
		if diff := cmp.Diff([]string{"ckpt-train-w-0-3-copy", "data-train"}, claims); diff != "" {
			t.Errorf("PVCs (-want +got):\n%s", diff)
		}
	})
}
