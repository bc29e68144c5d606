package jobsets

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/jobset-addons/jobset-addons/pkg/addon/addontest"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

func TestBarrierGroups(t *testing.T) {
	js := addontest.JobSet("ns", "a").InOrder().ReplicatedJobs(
		addontest.ReplicatedJob("init"),
		addontest.ReplicatedJob("node").Replicas(3).Parallelism(4).Completions(4),
		addontest.ReplicatedJob("eval").Replicas(2).Parallelism(8).Completions(2), // 2 pods a Job run at once
	).Obj()
	stages, errs := Stages(js)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	got := BarrierGroups(js, contract.StartBarrierStage, stages)
	want := []BarrierGroup{
		{Name: "stage-0", Stage: 0, ReplicatedJobs: []string{"init"}, Pods: 1},
		{Name: "stage-1", Stage: 1, ReplicatedJobs: []string{"node"}, Pods: 12},
		{Name: "stage-2", Stage: 2, ReplicatedJobs: []string{"eval"}, Pods: 4},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Stage (-want +got):\n%s", diff)
	}
	got = BarrierGroups(js, contract.StartBarrierJobSet, stages)
	want = []BarrierGroup{{Name: "jobset", ReplicatedJobs: []string{"init", "node", "eval"}, Pods: 17}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("JobSet (-want +got):\n%s", diff)
	}
}

func TestAtBarrier(t *testing.T) {
	since := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	pod := func(name, node string, running bool, state string) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PodSpec{NodeName: node}}
		if state != "" {
			p.Annotations = map[string]string{contract.StartBarrierStateAnnotationKey: state}
		}
		s := corev1.ContainerStatus{Name: contract.StartBarrierContainerName, State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{}}}
		if running {
			s.State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: since}}
		}
		p.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "download", Ready: true}, s}
		return p
	}
	pods := []*corev1.Pod{
		pod("a-0", "n1", true, ""),
		pod("a-1", "n2", true, contract.StartBarrierOpen),
		pod("b-0", "", false, ""),
		pod("b-1", "n3", false, ""),
		pod("c-0", "n1", true, contract.StartBarrierFailedPrefix+"timed out"),
	}
	var at []string
	for _, p := range pods {
		if got, ok := AtBarrier(p); ok {
			at = append(at, p.Name)
			if !got.Equal(since.Time) {
				t.Errorf("%s waits since %v, want %v", p.Name, got, since.Time)
			}
		}
	}
	if diff := cmp.Diff([]string{"a-0", "a-1"}, at); diff != "" {
		t.Errorf("at the barrier (-want +got):\n%s", diff)
	}
	want := "b-0 (not scheduled), b-1 (on n3, not at the barrier yet), c-0 (on n1, not at the barrier yet), 2 pods not created yet"
	if got := NotAtBarrier(pods, 7, 5); got != want {
		t.Errorf("NotAtBarrier = %q, want %q", got, want)
	}
	if got, want := NotAtBarrier(pods, 5, 1), "b-0 (not scheduled), and 2 more"; got != want {
		t.Errorf("NotAtBarrier, one shown = %q, want %q", got, want)
	}
}
