package podgroups_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/jobset-addons/jobset-addons/e2e/framework"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// TestWorkloadNotOurs: a Workload of the JobSet's name that a user made is left as it is: the
// kubernetes backend says so (WorkloadNameTaken), makes no PodGroup against it, and neither
// changes it nor deletes it, while the JobSet runs or once it is deleted.
func TestWorkloadNotOurs(t *testing.T) {
	f := framework.NamespacedFeature("kubernetes: a user's Workload of the JobSet's name", "left alone", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		requireWorkloadAPI(t, cfg)
		c := framework.Client(t, cfg)
		ns := framework.NamespaceFrom(ctx)
		users := &schedulingv1beta1.Workload{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "taken", Labels: map[string]string{"owner": "user"}},
			Spec: schedulingv1beta1.WorkloadSpec{PodGroupTemplates: []schedulingv1beta1.PodGroupTemplate{
				{Name: "mine", SchedulingPolicy: schedulingv1beta1.PodGroupSchedulingPolicy{Gang: &schedulingv1beta1.GangSchedulingPolicy{MinCount: 7}}},
			}},
		}
		if err := c.Create(ctx, users); err != nil {
			t.Fatal(err)
		}
		js := newJobSet(ns, "taken", contract.SchedulerKubernetes).ReplicatedJobs(replicated("w", 1, 2, "1s")).Obj()
		framework.CreateAll(ctx, t, c, js)
		waitEvent(ctx, t, c, js, "WorkloadNameTaken")
		time.Sleep(2 * time.Second) // a reconcile that would make a PodGroup has had its time
		if names, err := podGroupNames(ctx, c, ns, js.Name, contract.SchedulerKubernetes); err != nil || len(names) > 0 {
			t.Errorf("PodGroups %v (%v): want none against a Workload not ours", names, err)
		}
		unchanged := func(when string) {
			t.Helper()
			got := &schedulingv1beta1.Workload{}
			if err := c.Get(ctx, client.ObjectKeyFromObject(users), got); err != nil {
				t.Fatalf("%s: the user's Workload: %v", when, err)
			}
			if got.ResourceVersion != users.ResourceVersion || len(got.OwnerReferences) > 0 {
				t.Errorf("%s: the user's Workload was written: resourceVersion %s -> %s, owners %v, labels %v",
					when, users.ResourceVersion, got.ResourceVersion, got.OwnerReferences, got.Labels)
			}
		}
		unchanged("while the JobSet runs")
		if err := c.Delete(ctx, js, client.PropagationPolicy(metav1.DeletePropagationForeground)); err != nil {
			t.Fatal(err)
		}
		framework.Eventually(ctx, t, time.Minute, "JobSet deleted", func(ctx context.Context) (bool, string, error) {
			err := c.Get(ctx, client.ObjectKeyFromObject(js), js)
			return client.IgnoreNotFound(err) == nil && err != nil, fmt.Sprint(err), nil
		})
		unchanged("once the JobSet is deleted")
		return ctx
	})
	testenv.Test(t, f)
}

// TestTopologyKey: nodes in two racks with room for a gang of 4 only across racks (2 and 2): a
// kubernetes gang held to one rack (podgroups.jobset-addons.io/topology-key) gets none bound
// for 8 s; once rack a has room for 4, all 4 are bound there, every one on a node of rack a.
func TestTopologyKey(t *testing.T) {
	const rackLabel = "podgroups-e2e/rack"
	f := framework.NamespacedFeature("kubernetes: a gang held to one rack", "topology", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		requireWorkloadAPI(t, cfg)
		c := framework.Client(t, cfg)
		ns := framework.NamespaceFrom(ctx)
		addPoolNodeLabelled(ctx, t, cfg, ns, ns+"-a1", 2, map[string]string{rackLabel: "a"})
		addPoolNodeLabelled(ctx, t, cfg, ns, ns+"-b1", 2, map[string]string{rackLabel: "b"})
		js := newJobSet(ns, "racked", contract.SchedulerKubernetes).Annotation(contract.TopologyKeyAnnotationKey, rackLabel).
			ReplicatedJobs(onPool(replicated("w", 2, 2, "300s"), ns)).Obj()
		created := time.Now()
		framework.CreateAll(ctx, t, c, js)
		wantConstraint := &schedulingv1beta1.PodGroupSchedulingConstraints{Topology: []schedulingv1beta1.TopologyConstraint{{Key: rackLabel}}}
		pg := nativePodGroup(ctx, t, c, ns, "racked")
		wl := workload(ctx, t, c, ns, "racked")
		if !equality.Semantic.DeepEqual(pg.Spec.SchedulingConstraints, wantConstraint) || len(wl.Spec.PodGroupTemplates) != 1 ||
			!equality.Semantic.DeepEqual(wl.Spec.PodGroupTemplates[0].SchedulingConstraints, wantConstraint) {
			t.Fatalf("PodGroup constraints %+v, Workload templates %+v: want topology key %s in both", pg.Spec.SchedulingConstraints, wl.Spec.PodGroupTemplates, rackLabel)
		}
		holdUnbound(ctx, t, c, ns, js.Name, 4, "no rack had room for 4", nil)
		roomAt := time.Now()
		addPoolNodeLabelled(ctx, t, cfg, ns, ns+"-a2", 2, map[string]string{rackLabel: "a"})
		allBound := waitAllBound(ctx, t, c, ns, js.Name, 4, roomAt)
		var nodes []string
		for _, p := range pods(ctx, t, c, ns, js.Name) {
			nodes = append(nodes, p.Spec.NodeName)
			if p.Spec.NodeName != ns+"-a1" && p.Spec.NodeName != ns+"-a2" {
				t.Errorf("pod %s bound to %s, not in rack a", p.Name, p.Spec.NodeName)
			}
		}
		slices.Sort(nodes)
		t.Logf("0 of 4 bound for 8 s with 2+2 room across racks a and b; room added in rack a %s after the JobSet's creation; all 4 seen bound %s after that, on %v",
			roomAt.Sub(created).Round(time.Millisecond), allBound.Round(time.Millisecond), nodes)
		return ctx
	})
	testenv.Test(t, f)
}
