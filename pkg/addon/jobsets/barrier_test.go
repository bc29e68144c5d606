package jobsets

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

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
	got := BarrierGroups(js, stages)
	want := []BarrierGroup{
		{Name: "stage-0", Stage: 0, ReplicatedJobs: []string{"init"}, Pods: 1},
		{Name: "stage-1", Stage: 1, ReplicatedJobs: []string{"node"}, Pods: 12},
		{Name: "stage-2", Stage: 2, ReplicatedJobs: []string{"eval"}, Pods: 4},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("staged (-want +got):\n%s", diff)
	}
	if !StagedJobSetBarrier(contract.StartBarrierJobSet, stages) || StagedJobSetBarrier(contract.StartBarrierStage, stages) {
		t.Error("StagedJobSetBarrier: want true for JobSet on a staged JobSet only")
	}
	// Upstream dependsOn (the Trainer shape: node after its initializers complete) is staged too.
	trainer := addontest.JobSet("ns", "t").ReplicatedJobs(
		addontest.ReplicatedJob("dataset-initializer"), addontest.ReplicatedJob("model-initializer"),
		addontest.ReplicatedJob("node").Replicas(2),
	).Obj()
	trainer.Spec.ReplicatedJobs[2].DependsOn = []jobsetv1alpha2.DependsOn{
		{Name: "dataset-initializer", Status: jobsetv1alpha2.DependencyComplete}, {Name: "model-initializer", Status: jobsetv1alpha2.DependencyComplete}}
	if stages, errs = Stages(trainer); len(errs) > 0 {
		t.Fatal(errs)
	}
	want = []BarrierGroup{
		{Name: "stage-0", ReplicatedJobs: []string{"dataset-initializer", "model-initializer"}, Pods: 2},
		{Name: "stage-1", Stage: 1, ReplicatedJobs: []string{"node"}, Pods: 2},
	}
	if diff := cmp.Diff(want, BarrierGroups(trainer, stages)); diff != "" {
		t.Errorf("dependsOn (-want +got):\n%s", diff)
	}
	// One stage: one barrier for the JobSet.
	one := addontest.JobSet("ns", "one").ReplicatedJobs(addontest.ReplicatedJob("a"), addontest.ReplicatedJob("b").Replicas(2)).Obj()
	stages, _ = Stages(one)
	want = []BarrierGroup{{Name: "jobset", ReplicatedJobs: []string{"a", "b"}, Pods: 3}}
	if diff := cmp.Diff(want, BarrierGroups(one, stages)); diff != "" {
		t.Errorf("one stage (-want +got):\n%s", diff)
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

func TestBarrierRun(t *testing.T) {
	at := metav1.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	js := addontest.JobSet("ns", "a").ReplicatedJobs(addontest.ReplicatedJob("w")).Obj()
	cond := func(s metav1.ConditionStatus) []metav1.Condition {
		return []metav1.Condition{{Type: string(jobsetv1alpha2.JobSetSuspended), Status: s, LastTransitionTime: at}}
	}
	for name, tc := range map[string]struct {
		suspend   bool
		cond      []metav1.Condition
		want      string
		wantKnown bool
	}{
		"never suspended":    {want: "", wantKnown: true},
		"suspended":          {suspend: true, cond: cond(metav1.ConditionTrue)},
		"resume under way":   {cond: cond(metav1.ConditionTrue), want: "resuming 2025-01-02T03:04:05Z", wantKnown: true},
		"resumed":            {cond: cond(metav1.ConditionFalse), want: "2025-01-02T03:04:05Z", wantKnown: true},
		"suspend, not shown": {suspend: true},
	} {
		js.Spec.Suspend, js.Status.Conditions = ptr.To(tc.suspend), tc.cond
		if got, known := BarrierRun(js); got != tc.want || known != tc.wantKnown {
			t.Errorf("%s: BarrierRun = %q, %t; want %q, %t", name, got, known, tc.want, tc.wantKnown)
		}
	}
}
