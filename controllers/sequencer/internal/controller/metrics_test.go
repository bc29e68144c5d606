package controller

import (
	"context"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/pkg/addon/addontest"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

func TestDoneAt(t *testing.T) {
	seen := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	job := func(rj string, attempt string, done time.Time) batchv1.Job {
		j := batchv1.Job{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{
			contract.ReplicatedJobNameLabelKey: rj, "jobset.sigs.k8s.io/restart-attempt": attempt}}}
		if !done.IsZero() {
			j.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(done)}}
		}
		return j
	}
	jobs := []batchv1.Job{
		job("init", "0", seen.Add(-10*time.Second)),
		job("init", "0", seen.Add(-4*time.Second)), // the last Job to complete
		job("init", "1", seen.Add(-1*time.Second)), // another attempt
		job("other", "0", seen.Add(-2*time.Second)),
	}
	complete := []contract.Dependency{{Name: "init", Status: contract.DependencyComplete}}
	if got := doneAt(jobs, 0, complete, seen); !got.Equal(seen.Add(-4 * time.Second)) {
		t.Errorf("Complete predecessor: done at %v, want its last Job's Complete time %v", got, seen.Add(-4*time.Second))
	}
	ready := []contract.Dependency{{Name: "other", Status: contract.DependencyReady}}
	if got := doneAt(jobs, 0, ready, seen); !got.Equal(seen) {
		t.Errorf("Ready predecessor: done at %v, want the reconcile that saw it, %v", got, seen)
	}
	if got := doneAt(nil, 0, complete, seen); !got.Equal(seen) {
		t.Errorf("no Job: done at %v, want %v", got, seen)
	}
}

// TestWaitsMembersOnly: the JobSets with gated pods count only member pods too.
func TestWaitsMembersOnly(t *testing.T) {
	js := addontest.JobSet("ns", "a").UID("a-uid").ReplicatedJobs(addontest.ReplicatedJob("w")).Obj()
	created := metav1.NewTime(time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC))
	gated := gatedPod(js, "w", 0, 0)
	gated.CreationTimestamp = created
	forged := addontest.Pod("ns", "a", "w", 0, 0).Name("forged").UID("forged").Gate(contract.SequencerSchedulingGateValue).Obj()
	forged.CreationTimestamp = metav1.NewTime(created.Add(-time.Hour))
	c := fakeClient(js, memberJob(js, "w", 0, 0), gated, forged)
	waits, err := Waits(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	if len(waits) != 1 || waits[0].Key != "ns/a" || waits[0].Reason != WaitReason || !waits[0].Since.Equal(created.Time) {
		t.Errorf("waits = %+v, want one: ns/a gated since %v", waits, created.Time)
	}
}

func fakeClient(objs ...client.Object) client.Client {
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = jobsetv1alpha2.AddToScheme(scheme)
	return fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).Build()
}
