package podgroups_test

import (
	"context"
	"testing"

	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	volcanov1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/jobset-addons/jobset-addons/e2e/framework"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// TestStories runs the examples of examples/podgroups on the real schedulers: each JobSet's
// pods are gang-scheduled, it completes, and its PodGroups are gone while it stays.
func TestStories(t *testing.T) {
	for _, tc := range []struct {
		file      string
		scheduler contract.Scheduler
		check     func(ctx context.Context, t *testing.T, c client.Client, js *jobsetv1alpha2.JobSet)
	}{
		{"kep2437-story1-gang.yaml", contract.SchedulerVolcano, func(ctx context.Context, t *testing.T, c client.Client, js *jobsetv1alpha2.JobSet) {
			pg := volcanoPodGroup(ctx, t, c, js.Namespace, js.Name)
			if pg.Spec.MinMember != 2 || pg.Spec.PriorityClassName != "high-priority" || pg.Spec.Queue != "default" {
				t.Errorf("PodGroup spec %+v: want minMember 2, high-priority, queue default", pg.Spec)
			}
		}},
		{"kep2437-story2-queue.yaml", contract.SchedulerVolcano, func(ctx context.Context, t *testing.T, c client.Client, js *jobsetv1alpha2.JobSet) {
			pg := volcanoPodGroup(ctx, t, c, js.Namespace, js.Name)
			if pg.Spec.MinMember != 2 || pg.Spec.Queue != "high-priority-queue" {
				t.Errorf("PodGroup spec %+v: want minMember 2, queue high-priority-queue", pg.Spec)
			}
			// Kept by Volcano v1.14.1's CRD (v1.10.0's dropped it: NetworkTopologyDropped).
			if nt := pg.Spec.NetworkTopology; nt == nil || nt.Mode != volcanov1beta1.HardNetworkTopologyMode || ptr.Deref(nt.HighestTierAllowed, 0) != 1 {
				t.Errorf("PodGroup spec networkTopology %+v: want hard, highestTierAllowed 1", nt)
			}
		}},
		{"coscheduling-staged.yaml", contract.SchedulerCoscheduling, func(ctx context.Context, t *testing.T, c client.Client, js *jobsetv1alpha2.JobSet) {
			pg := coschedPodGroup(ctx, t, c, js.Namespace, js.Name+"-stage-0")
			if pg.Spec.MinMember != 1 {
				t.Errorf("stage 0 minMember %d, want 1", pg.Spec.MinMember)
			}
			pg = coschedPodGroup(ctx, t, c, js.Namespace, js.Name+"-stage-1")
			if pg.Spec.MinMember != 4 {
				t.Errorf("stage 1 minMember %d, want 4", pg.Spec.MinMember)
			}
		}},
		{"kubernetes-gang.yaml", contract.SchedulerKubernetes, func(ctx context.Context, t *testing.T, c client.Client, js *jobsetv1alpha2.JobSet) {
			pg := nativePodGroup(ctx, t, c, js.Namespace, js.Name)
			wl := workload(ctx, t, c, js.Namespace, js.Name)
			if minCount(pg.Spec.SchedulingPolicy) != 4 || len(wl.Spec.PodGroupTemplates) != 1 || minCount(wl.Spec.PodGroupTemplates[0].SchedulingPolicy) != 4 {
				t.Errorf("PodGroup spec %+v, Workload templates %+v: want minCount 4 in both", pg.Spec, wl.Spec.PodGroupTemplates)
			}
		}},
	} {
		f := framework.NamespacedFeature(tc.file, "gang-scheduled to completion", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			if tc.scheduler == contract.SchedulerKubernetes {
				requireWorkloadAPI(t, cfg)
				framework.RequireJobSet(t, framework.SchedulingGroupJobSetSince, "its JobSet CRD prunes spec.schedulingGroup, where podgroups' kubernetes backend names the gang")
			}
			c := framework.Client(t, cfg)
			js, objs := framework.Example(t, "podgroups", tc.file, framework.NamespaceFrom(ctx))
			framework.CreateAll(ctx, t, c, objs...)
			tc.check(ctx, t, c, js)
			framework.WaitJobSet(ctx, t, c, js, jobsetv1alpha2.JobSetCompleted)
			for _, p := range pods(ctx, t, c, js.Namespace, js.Name) {
				group := js.Name
				if tc.file == "coscheduling-staged.yaml" {
					group += map[string]string{"initializer": "-stage-0", "trainer": "-stage-1"}[p.Labels[contract.ReplicatedJobNameLabelKey]]
				}
				checkPodNamesGang(t, &p, tc.scheduler, group)
			}
			waitPodGroups(ctx, t, c, js.Namespace, js.Name, tc.scheduler)
			if tc.scheduler == contract.SchedulerKubernetes {
				waitWorkloadGone(ctx, t, c, js.Namespace, js.Name)
			}
			return ctx
		})
		testenv.Test(t, f)
	}
}
