package controller

import (
	"context"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

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

func TestBarrierWaits(t *testing.T) {
	started := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	pod := func(name, jobSet, node string, running bool) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Labels: map[string]string{contract.JobSetNameLabelKey: jobSet}}}
		p.Spec.NodeName = node
		s := corev1.ContainerStatus{Name: contract.StartBarrierContainerName}
		if running {
			s.State.Running = &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(started)}
		}
		p.Status.InitContainerStatuses = []corev1.ContainerStatus{s}
		return p
	}
	c := fake.NewClientBuilder().WithObjects(
		pod("a-0", "a", "n1", true),  // at the barrier
		pod("a-1", "a", "", false),   // not scheduled: not at it
		pod("b-0", "b", "n1", false), // its barrier container not running
	).Build()
	waits, err := BarrierWaits(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	if len(waits) != 1 || waits[0].Key != "ns/a" || waits[0].Reason != BarrierReason || !waits[0].Since.Equal(started) {
		t.Errorf("waits = %+v, want ns/a at the barrier since %v", waits, started)
	}
}
