package gates_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	coschedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"
	volcanov1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/jobset-addons/jobset-addons/e2e/framework"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// TestElasticBackends (ElasticJobSet, make e2e SUITE=gates): the gang of a running JobSet (one
// stage, two Jobs of 2 pods of 100m CPU each) follows a raise to 4 pods a Job and a lowering back,
// on each backend: Volcano's and coscheduling's PodGroup (minMember 4→8→4, minResources
// 400m→800m→400m CPU) and the kubernetes backend's Workload template and PodGroup (minCount
// 4→8→4; kube-scheduler sums requests itself). The gang schedulers do not run: what is checked
// is what podgroups writes, each in the same PodGroup object (its UID kept).
func TestElasticBackends(t *testing.T) {
	gateTest(t, "ElasticJobSet", "each backend's gang follows a running JobSet's scale", "minMember, minResources", func(ctx context.Context, t *testing.T, cfg *envconf.Config, c client.Client, ns string) {
		for _, s := range []contract.Scheduler{contract.SchedulerVolcano, contract.SchedulerCoscheduling, contract.SchedulerKubernetes} {
			if s == contract.SchedulerKubernetes && !framework.WorkloadAPIServed(t, cfg) {
				t.Logf("kubernetes: n/a, the apiserver does not serve the Workload API")
				continue
			}
			name := "eb-" + string(s)
			js := newJobSet(ns, name, s, "Complete", nil, nil, stage{"w", 2, 2, "10m"})
			delete(js.Annotations, contract.ExecutionPolicyAnnotationKey)
			delete(js.Annotations, contract.WaitForAnnotationKey)
			delete(js.Annotations, contract.PoliciesAnnotationKey)
			if err := c.Create(ctx, js); err != nil {
				t.Fatalf("%s: %v", s, err)
			}
			var uid string
			for _, step := range []struct{ pods, gang int32 }{{2, 4}, {4, 8}, {2, 4}} {
				if err := scale(ctx, t, c, js, map[string]int32{"w": step.pods}); err != nil {
					t.Fatalf("%s: scaling to %d: %v", s, step.pods, err)
				}
				cpu := resource.NewMilliQuantity(100*int64(step.gang), resource.DecimalSI)
				framework.Eventually(ctx, t, 30*time.Second, fmt.Sprintf("%s gang %d", s, step.gang), func(ctx context.Context) (bool, string, error) {
					got, res, id, err := gang(ctx, c, s, ns, name)
					if err != nil {
						return false, err.Error(), nil
					}
					if uid == "" {
						uid = id
					}
					ok := got == step.gang && id == uid && (s == contract.SchedulerKubernetes || res.Cmp(*cpu) == 0)
					return ok, fmt.Sprintf("min %d, cpu %s, uid %s (first %s)", got, res.String(), id, uid), nil
				})
				if s == contract.SchedulerKubernetes {
					t.Logf("%s: %d pods a Job: Workload template and PodGroup minCount %d (no minResources: kube-scheduler sums requests)", s, step.pods, step.gang)
				} else {
					t.Logf("%s: %d pods a Job: minMember %d, minResources cpu %s", s, step.pods, step.gang, cpu)
				}
			}
		}
	})
}

// gang reads the gang size, CPU of minResources and UID of the JobSet's one PodGroup.
func gang(ctx context.Context, c client.Client, s contract.Scheduler, ns, name string) (int32, resource.Quantity, string, error) {
	key := client.ObjectKey{Namespace: ns, Name: name}
	switch s {
	case contract.SchedulerVolcano:
		var pg volcanov1beta1.PodGroup
		if err := c.Get(ctx, key, &pg); err != nil {
			return 0, resource.Quantity{}, "", err
		}
		var cpu resource.Quantity
		if pg.Spec.MinResources != nil {
			cpu = (*pg.Spec.MinResources)[corev1.ResourceCPU]
		}
		return pg.Spec.MinMember, cpu, string(pg.UID), nil
	case contract.SchedulerCoscheduling:
		var pg coschedv1alpha1.PodGroup
		if err := c.Get(ctx, key, &pg); err != nil {
			return 0, resource.Quantity{}, "", err
		}
		return pg.Spec.MinMember, pg.Spec.MinResources[corev1.ResourceCPU], string(pg.UID), nil
	default:
		var wl schedulingv1beta1.Workload
		if err := c.Get(ctx, key, &wl); err != nil {
			return 0, resource.Quantity{}, "", err
		}
		var pg schedulingv1beta1.PodGroup
		if err := c.Get(ctx, key, &pg); err != nil {
			return 0, resource.Quantity{}, "", err
		}
		if len(wl.Spec.PodGroupTemplates) != 1 || minCount(wl.Spec.PodGroupTemplates[0].SchedulingPolicy) != minCount(pg.Spec.SchedulingPolicy) {
			return 0, resource.Quantity{}, "", fmt.Errorf("the Workload's template and the PodGroup differ: %+v, %+v", wl.Spec.PodGroupTemplates, pg.Spec.SchedulingPolicy)
		}
		return minCount(pg.Spec.SchedulingPolicy), resource.Quantity{}, string(pg.UID), nil
	}
}
