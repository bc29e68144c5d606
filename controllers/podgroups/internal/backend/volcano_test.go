package backend

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/utils/ptr"
	volcanov1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/jobset-addons/jobset-addons/pkg/addon/addontest"
	"github.com/jobset-addons/jobset-addons/pkg/addon/checks/podgroups"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// TestVolcanoTaskMinimums: a Volcano PodGroup holds, beside minMember, every pod of each
// ReplicatedJob in spec.minTaskMember, under the task name its pods carry: the ReplicatedJob's
// name, or the user's own task-spec annotation (kept, and summed over the ReplicatedJobs that
// share it). A template without the annotation (a JobSet admitted before podgroups wrote it)
// adds no task, and a sequenced JobSet's stage gang holds its stage's tasks only.
func TestVolcanoTaskMinimums(t *testing.T) {
	const task = contract.VolcanoTaskSpecAnnotationKey
	b := byScheduler[contract.SchedulerVolcano]
	volcano := func(sequenced bool) map[string]string {
		a := kv(contract.SchedulerAnnotationKey, "volcano")
		if sequenced {
			a[inOrder] = "InOrder"
		}
		return a
	}
	mpi := func(sequenced bool) *addontest.JobSetWrapper {
		return addontest.JobSet("ns", "mpi").UID("uid").Annotations(volcano(sequenced)).ReplicatedJobs(
			addontest.ReplicatedJob("launcher"),
			addontest.ReplicatedJob("worker").Replicas(2).Parallelism(3),
		)
	}
	cases := map[string]struct {
		js     *addontest.JobSetWrapper
		inject bool
		// want is each gang's minMember and minTaskMember.
		wantMember []int32
		want       []map[string]int32
	}{
		"launcher and workers": {js: mpi(false), inject: true, wantMember: []int32{7}, want: []map[string]int32{{"launcher": 1, "worker": 6}}},
		"sequenced: each stage its own task": {js: mpi(true), inject: true, wantMember: []int32{1, 6},
			want: []map[string]int32{{"launcher": 1}, {"worker": 6}}},
		"the user's own task names, one shared": {js: addontest.JobSet("ns", "own").UID("uid").Annotations(volcano(false)).ReplicatedJobs(
			addontest.ReplicatedJob("driver").PodAnnotation(task, "master"),
			addontest.ReplicatedJob("gpu").Replicas(2).PodAnnotation(task, "worker"),
			addontest.ReplicatedJob("cpu").Replicas(3).PodAnnotation(task, "worker"),
		), inject: true, wantMember: []int32{6}, want: []map[string]int32{{"master": 1, "worker": 5}}},
		"admitted before podgroups named tasks": {js: mpi(false), wantMember: []int32{7}, want: []map[string]int32{nil}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			js := tc.js.Obj()
			s, gangs := read(t, js)
			if tc.inject {
				Inject(b, js, s, gangs)
			}
			var gotMember []int32
			var got []map[string]int32
			for _, g := range gangs {
				spec := b.Build(js, g, s, "", "default").(*volcanov1beta1.PodGroup).Spec
				gotMember = append(gotMember, spec.MinMember)
				got = append(got, spec.MinTaskMember)
			}
			if diff := cmp.Diff(tc.wantMember, gotMember); diff != "" {
				t.Errorf("minMember (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("minTaskMember (-want +got):\n%s", diff)
			}
		})
	}
}

// TestVolcanoNetworkTopology: the JobSet's network topology is the PodGroup's
// spec.networkTopology, and a PodGroup that comes back without it (a Volcano CRD from before
// network topology support, such as v1.10.0's, prunes the field) is told; the testbed's Volcano
// keeps it, so this is where the telling is tested.
func TestVolcanoNetworkTopology(t *testing.T) {
	b := byScheduler[contract.SchedulerVolcano]
	js := addontest.JobSet("ns", "topo").UID("uid").Annotations(kv(contract.SchedulerAnnotationKey, "volcano")).
		ReplicatedJobs(addontest.ReplicatedJob("w").Replicas(2)).Obj()
	s, gangs := read(t, js)
	s.NetworkTopology = &contract.NetworkTopology{Mode: contract.NetworkTopologySoft, HighestTierAllowed: ptr.To(2)}
	pg := b.Build(js, gangs[0], s, "", "default").(*volcanov1beta1.PodGroup)
	want := &volcanov1beta1.NetworkTopologySpec{Mode: volcanov1beta1.SoftNetworkTopologyMode, HighestTierAllowed: ptr.To(2)}
	if diff := cmp.Diff(want, pg.Spec.NetworkTopology); diff != "" {
		t.Errorf("networkTopology (-want +got):\n%s", diff)
	}
	if why := b.Dropped(s, gangs[0], pg).Topology; why != "" {
		t.Errorf("kept topology told as dropped: %s", why)
	}
	pg.Spec.NetworkTopology = nil
	if why := b.Dropped(s, gangs[0], pg).Topology; !strings.Contains(why, "no spec.networkTopology") {
		t.Errorf("dropped topology told as %q", why)
	}
	if why := b.Dropped(podgroups.Settings{Scheduler: contract.SchedulerVolcano}, gangs[0], pg).Topology; why != "" {
		t.Errorf("no topology asked for, yet told: %s", why)
	}
}
