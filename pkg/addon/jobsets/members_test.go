package jobsets

import (
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/jobset-addons/jobset-addons/pkg/addon/addontest"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

func TestMembers(t *testing.T) {
	js := addontest.JobSet("ns", "js").ReplicatedJobs(addontest.ReplicatedJob("w").Replicas(2)).Obj()
	js.UID, js.Status.Restarts = "js-uid", 1
	job := func(name, uid, rj, idx, attempt string, owner types.UID) batchv1.Job {
		j := batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(uid), Labels: map[string]string{
			contract.ReplicatedJobNameLabelKey: rj, contract.JobIndexLabelKey: idx, contract.RestartAttemptLabelKey: attempt}}}
		if owner != "" {
			j.OwnerReferences = []metav1.OwnerReference{{APIVersion: "jobset.x-k8s.io/v1alpha2", Kind: "JobSet", Name: "js", UID: owner, Controller: ptr.To(true)}}
		}
		return j
	}
	jobs := []batchv1.Job{
		job("js-w-0", "j0", "w", "0", "1", "js-uid"),
		job("js-w-1", "j1", "w", "1", "1", "js-uid"),
		job("js-w-2", "j2", "w", "2", "9", "js-uid"), // index past replicas
		job("forged", "j3", "w", "0", "9", "js-uid"), // not the name upstream gives
		job("js-x-0", "j4", "x", "0", "9", "js-uid"), // no such ReplicatedJob
		job("js-w-0", "j5", "w", "0", "9", "other"),  // another JobSet's
		job("js-w-0", "j6", "w", "0", "9", ""),       // no controller
	}
	m := MembersOf(js, jobs)
	if len(m) != 2 || m["j0"] == nil || m["j1"] == nil {
		t.Fatalf("members %v, want j0 and j1", m)
	}
	if got := m.Attempt(js); got != 1 {
		t.Errorf("Attempt = %d, want 1 (the forged Jobs' 9 ignored)", got)
	}
	pod := func(ref *metav1.OwnerReference, labels map[string]string) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", Labels: labels}}
		if ref != nil {
			p.OwnerReferences = []metav1.OwnerReference{*ref}
		}
		return p
	}
	forgedLabels := map[string]string{contract.JobSetNameLabelKey: "js", contract.JobSetUIDLabelKey: "js-uid",
		contract.ReplicatedJobNameLabelKey: "w", contract.RestartAttemptLabelKey: "7"}
	ctrlRef := func(kind string, uid types.UID) *metav1.OwnerReference {
		return &metav1.OwnerReference{Kind: kind, Name: "js-w-1", UID: uid, Controller: ptr.To(true)}
	}
	for name, tc := range map[string]struct {
		p           *corev1.Pod
		wantRJ      string
		wantAttempt int32
		wantOK      bool
	}{
		"of a member Job":          {p: pod(ctrlRef("Job", "j1"), forgedLabels), wantRJ: "w", wantAttempt: 1, wantOK: true},
		"bare, labelled":           {p: pod(nil, forgedLabels), wantAttempt: -1},
		"of a forged Job":          {p: pod(ctrlRef("Job", "j3"), forgedLabels), wantAttempt: -1},
		"owned by the JobSet":      {p: pod(ctrlRef("JobSet", "js-uid"), forgedLabels), wantAttempt: -1},
		"a Job ref, no controller": {p: pod(&metav1.OwnerReference{Kind: "Job", UID: "j1"}, forgedLabels), wantAttempt: -1},
	} {
		rj, attempt, ok := m.PodOf(tc.p)
		if rj != tc.wantRJ || attempt != tc.wantAttempt || ok != tc.wantOK {
			t.Errorf("%s: PodOf = %q, %d, %t; want %q, %d, %t", name, rj, attempt, ok, tc.wantRJ, tc.wantAttempt, tc.wantOK)
		}
	}
}
