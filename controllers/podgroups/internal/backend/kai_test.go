package backend

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/jobset-addons/jobset-addons/controllers/podgroups/internal/backend/kaiapi"
	"github.com/jobset-addons/jobset-addons/pkg/addon/addontest"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// A sequenced JobSet: a KAI PodGroup per stage, named with the namespace, its queue the
// JobSet's or the default, a subGroup per ReplicatedJob of all its pods; its pods name it,
// their subGroup and queue, and get KAI's schedulerName.
func TestKAI(t *testing.T) {
	b := NewRegistry(Names{KAI: "kai-scheduler", KAIDefaultQueue: "default-queue"}).For(contract.SchedulerKAI)
	for name, tc := range map[string]struct {
		annotations map[string]string
		queue       string
	}{
		"default queue":      {kv(inOrder, "InOrder", contract.SchedulerAnnotationKey, "kai"), "default-queue"},
		"the JobSet's queue": {kv(inOrder, "InOrder", contract.SchedulerAnnotationKey, "kai", contract.VolcanoQueueNameAnnotationKey, "research"), "research"},
	} {
		t.Run(name, func(t *testing.T) {
			js := addontest.JobSet("ns", "train").UID("uid").Annotations(tc.annotations).ReplicatedJobs(
				addontest.ReplicatedJob("init"),
				addontest.ReplicatedJob("launcher"),
				addontest.ReplicatedJob("worker").Replicas(3).Pods(2),
			).Obj()
			s, gangs := read(t, js)
			if s.Queue != "" && s.Queue != tc.queue {
				t.Fatalf("queue %q", s.Queue)
			}
			var names []string
			for _, g := range gangs {
				names = append(names, g.Name)
			}
			if diff := cmp.Diff([]string{"train-stage-0.ns", "train-stage-1.ns", "train-stage-2.ns"}, names); diff != "" {
				t.Fatalf("gang names (-want +got):\n%s", diff)
			}
			Inject(b, js, s, gangs)
			for i, rj := range js.Spec.ReplicatedJobs {
				pt := rj.Template.Spec.Template
				if got, _ := b.GangOf(&pt); got != gangs[i].Name || pt.Annotations[contract.KAIPodGroupAnnotationKey] != gangs[i].Name {
					t.Errorf("%s: gang %q, want %q", rj.Name, got, gangs[i].Name)
				}
				if pt.Labels[contract.KAISubGroupLabelKey] != rj.Name || pt.Labels[contract.KAIQueueLabelKey] != tc.queue || pt.Spec.SchedulerName != "kai-scheduler" {
					t.Errorf("%s: labels %v, schedulerName %q", rj.Name, pt.Labels, pt.Spec.SchedulerName)
				}
			}
			if !Admitted(b, js, gangs) {
				t.Error("not Admitted after Inject")
			}
			pg := b.Build(js, gangs[2], s, "high", "volcano-default").(*kaiapi.PodGroup)
			want := kaiapi.PodGroupSpec{MinMember: 6, Queue: tc.queue, PriorityClassName: "high", SubGroups: []kaiapi.SubGroup{{Name: "worker", MinMember: 6}}}
			if diff := cmp.Diff(want, pg.Spec); diff != "" {
				t.Errorf("spec (-want +got):\n%s", diff)
			}
			if pg.Name != "train-stage-2.ns" || pg.Namespace != "ns" {
				t.Errorf("PodGroup %s/%s", pg.Namespace, pg.Name)
			}
		})
	}
}

// A JobSet that is not sequenced: one PodGroup, a subGroup per ReplicatedJob, each its own
// minimum.
func TestKAISubGroups(t *testing.T) {
	b := NewRegistry(Names{KAI: "kai-scheduler", KAIDefaultQueue: "q"}).For(contract.SchedulerKAI)
	js := addontest.JobSet("team-a", "mpi").UID("uid").Annotations(kv(contract.SchedulerAnnotationKey, "kai")).ReplicatedJobs(
		addontest.ReplicatedJob("launcher"),
		addontest.ReplicatedJob("worker").Replicas(2).Pods(4),
	).Obj()
	s, gangs := read(t, js)
	if len(gangs) != 1 || gangs[0].Name != "mpi.team-a" {
		t.Fatalf("gangs %v", gangs)
	}
	pg := b.Build(js, gangs[0], s, "", "").(*kaiapi.PodGroup)
	want := kaiapi.PodGroupSpec{MinMember: 9, Queue: "q", SubGroups: []kaiapi.SubGroup{{Name: "launcher", MinMember: 1}, {Name: "worker", MinMember: 8}}}
	if diff := cmp.Diff(want, pg.Spec); diff != "" {
		t.Errorf("spec (-want +got):\n%s", diff)
	}
	have := pg.DeepCopy()
	have.Spec = kaiapi.PodGroupSpec{MinMember: 1}
	b.Adopt(have, pg)
	if diff := cmp.Diff(want, have.Spec); diff != "" {
		t.Errorf("adopted spec (-want +got):\n%s", diff)
	}
	if _, ok := b.(Prerequisites); !ok {
		t.Error("KAI is no Prerequisites")
	}
}
