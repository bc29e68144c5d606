package podgroups_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
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
		js := newJobSet(ns, "taken", contract.SchedulerKubernetes).replicated("w", 1, 2, "1s").JobSet
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
