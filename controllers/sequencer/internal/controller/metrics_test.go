package controller

import (
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
