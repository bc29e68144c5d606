package podgroups_test

import (
	"context"
	"testing"
	"time"

	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/e2e/framework"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// TestComposite: a composite gang (podgroups.jobset-addons.io/composite) of 2 Jobs × 2 pods,
// each Job held to one rack. Rack a has room for 2 pods, rack b for 1: the first Job fits rack
// a, the second fits no rack, and none of the 4 is bound for 8 s (the JobSet is all-or-nothing).
// Once rack b has room for 2, all 4 are bound, each Job's pods in one rack — one Job per rack,
// which one gang held to one rack (TestTopologyKey) could never be with this room. The
// CompositePodGroup and the Jobs' PodGroups go when the JobSet finishes.
func TestComposite(t *testing.T) {
	const rackLabel = "podgroups-e2e/rack"
	f := framework.NamespacedFeature("kubernetes: a composite gang, each Job in one rack", "all or nothing, one rack per Job", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		requireWorkloadAPI(t, cfg)
		c := framework.Client(t, cfg)
		ns := framework.NamespaceFrom(ctx)
		version := framework.CompositePodGroupVersion(t, cfg)
		if version == "" {
			t.Skip("n/a: the apiserver does not serve CompositePodGroup (scheduling.k8s.io/v1beta1 or v1alpha3, gate CompositePodGroup)")
		}
		addPoolNodeLabelled(ctx, t, cfg, ns, ns+"-a1", 2, map[string]string{rackLabel: "a"})
		addPoolNodeLabelled(ctx, t, cfg, ns, ns+"-b1", 1, map[string]string{rackLabel: "b"})
		js := newJobSet(ns, "comp", contract.SchedulerKubernetes).Annotation(contract.TopologyKeyAnnotationKey, rackLabel).
			Annotation(contract.CompositeAnnotationKey, "true").ReplicatedJobs(onPool(replicated("w", 2, 2, "20s"), ns)).Obj()
		created := time.Now()
		framework.CreateAll(ctx, t, c, js)

		cpg := framework.CompositePodGroup(ctx, t, c, ns, "comp", version)
		if got := framework.WrittenAt(cpg, framework.AddonManager(addonName)); got != version {
			t.Errorf("CompositePodGroup comp written by podgroups at %q (its managedFields: %v), want %s: the newest version the apiserver serves", got, framework.Managers(cpg), version)
		}
		if g := cpg.Spec.SchedulingPolicy.Gang; g == nil || g.MinGroupCount != 2 {
			t.Errorf("CompositePodGroup comp policy %+v, want gang minGroupCount 2", cpg.Spec.SchedulingPolicy)
		}
		wantConstraint := &schedulingv1beta1.PodGroupSchedulingConstraints{Topology: []schedulingv1beta1.TopologyConstraint{{Key: rackLabel}}}
		for _, job := range []string{"comp-w-0", "comp-w-1"} {
			pg := nativePodGroup(ctx, t, c, ns, job)
			if ptr.Deref(pg.Spec.ParentCompositePodGroupName, "") != "comp" || pg.Spec.SchedulingPolicy.Gang == nil || pg.Spec.SchedulingPolicy.Gang.MinCount != 2 ||
				!equality.Semantic.DeepEqual(pg.Spec.SchedulingConstraints, wantConstraint) {
				t.Errorf("PodGroup %s: parent %v, policy %+v, constraints %+v; want parent comp, gang minCount 2, topology %s",
					job, pg.Spec.ParentCompositePodGroupName, pg.Spec.SchedulingPolicy, pg.Spec.SchedulingConstraints, rackLabel)
			}
		}
		holdUnbound(ctx, t, c, ns, js.Name, 4, "rack a had room for one Job, rack b for none", nil)
		roomAt := time.Now()
		addPoolNodeLabelled(ctx, t, cfg, ns, ns+"-b2", 1, map[string]string{rackLabel: "b"})
		allBound := waitAllBound(ctx, t, c, ns, js.Name, 4, roomAt)
		rack := map[string]string{ns + "-a1": "a", ns + "-b1": "b", ns + "-b2": "b"}
		jobRacks := map[string]map[string]bool{}
		for _, p := range pods(ctx, t, c, ns, js.Name) {
			job := p.Labels["job-name"]
			if sg := p.Spec.SchedulingGroup; sg == nil || ptr.Deref(sg.PodGroupName, "") != job {
				t.Errorf("pod %s of Job %s names PodGroup %v, want its Job's", p.Name, job, sg)
			}
			if jobRacks[job] == nil {
				jobRacks[job] = map[string]bool{}
			}
			jobRacks[job][rack[p.Spec.NodeName]] = true
		}
		for job, racks := range jobRacks {
			if len(racks) != 1 {
				t.Errorf("Job %s spans racks %v, want one", job, racks)
			}
		}
		t.Logf("0 of 4 bound for 8 s with room a=2, b=1; room added in rack b %s after the JobSet's creation; all 4 seen bound %s after that; racks by Job: %v",
			roomAt.Sub(created).Round(time.Millisecond), allBound.Round(time.Millisecond), jobRacks)

		framework.WaitJobSet(ctx, t, c, js, jobsetv1alpha2.JobSetCompleted)
		framework.WaitCompositeGangsGone(ctx, t, c, ns, version)
		return ctx
	})
	testenv.Test(t, f)
}
