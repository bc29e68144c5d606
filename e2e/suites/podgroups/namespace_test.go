package podgroups_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/e2e/framework"
	"github.com/jobset-addons/jobset-addons/e2e/testbed"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// TestNamespaceGoing: a JobSet's namespace is deleted, and the deletion takes its PodGroup
// before the JobSet (here a policy refuses the JobSet's deletion, so that the namespace stays
// terminating with the JobSet in it, not deleted). podgroups makes the PodGroup again, and the
// API server refuses the create (403, the namespace terminating): that is nothing to do, not a
// failure: no error counted (jobset_addons_podgroups_errors_total, controller-runtime's reconcile
// errors), and so no retry. Before, each such refusal was an error, retried with back-off, and
// the deletion of a namespace of 300 JobSets drew some 200 refused creates a second.
func TestNamespaceGoing(t *testing.T) {
	f := framework.NamespacedFeature("a JobSet whose namespace is being deleted", "its PodGroup not made again, no error", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		c := framework.Client(t, cfg)
		ns := framework.NamespaceFrom(ctx)
		const held = "e2e: this JobSet is kept while its namespace terminates"
		// Once the test ends the policy goes, and the namespace with its JobSet.
		framework.DenyPolicy(ctx, t, c, "e2e-keep-jobsets-"+ns, admissionregistrationv1.MatchResources{
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: ns}},
			ResourceRules:     framework.RulesOf(jobsetv1alpha2.GroupVersion.Group, "jobsets", admissionregistrationv1.Delete),
		}, "false", held)

		js := newJobSet(ns, "kept", contract.SchedulerVolcano).Suspend(true).ReplicatedJobs(replicated("a", 1, 2, "1h")).Obj()
		framework.CreateAll(ctx, t, c, js)
		waitPodGroups(ctx, t, c, ns, js.Name, contract.SchedulerVolcano, js.Name)
		framework.Eventually(ctx, t, 30*time.Second, "the policy in effect: the JobSet's deletion refused", func(ctx context.Context) (bool, string, error) {
			err := c.Delete(ctx, js.DeepCopy(), client.DryRunAll)
			return err != nil, fmt.Sprint(err), nil
		})

		errorsBefore := podgroupsErrors(ctx, t)
		refused := func() float64 {
			return testbed.MetricSum(framework.APIServerMetrics(ctx, t, cfg), "apiserver_request_total",
				`code="403"`, `group="scheduling.volcano.sh"`, `resource="podgroups"`, `verb="POST"`)
		}
		refusedBefore := refused()
		if err := c.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
		// The namespace's deletion takes the PodGroup, not the JobSet; podgroups tries to make
		// the PodGroup again and is refused.
		framework.Eventually(ctx, t, time.Minute, "the PodGroup gone, its create refused, the JobSet kept", func(ctx context.Context) (bool, string, error) {
			names, err := podGroupNames(ctx, c, ns, js.Name, contract.SchedulerVolcano)
			if err != nil {
				return false, err.Error(), nil
			}
			kept := &jobsetv1alpha2.JobSet{}
			if err := c.Get(ctx, client.ObjectKeyFromObject(js), kept); err != nil || !kept.DeletionTimestamp.IsZero() {
				return false, "", fmt.Errorf("the JobSet was not kept: %v, deleted at %v", err, kept.DeletionTimestamp)
			}
			n := refused() - refusedBefore
			return len(names) == 0 && n > 0, fmt.Sprintf("PodGroups %v, %.0f PodGroup creates refused", names, n), nil
		})
		// Long enough for controller-runtime's back-off (5 ms, doubling) to have retried an
		// error some ten times.
		time.Sleep(5 * time.Second)
		if got := podgroupsErrors(ctx, t); got != errorsBefore {
			t.Errorf("podgroups' errors (create errors, reconcile errors) went from %v to %v over creates refused in a terminating namespace, want no change", errorsBefore, got)
		}
		t.Logf("%.0f PodGroup creates refused in the terminating namespace", refused()-refusedBefore)
		ns2 := &corev1.Namespace{}
		if err := c.Get(ctx, client.ObjectKey{Name: ns}, ns2); err != nil || ns2.Status.Phase != corev1.NamespaceTerminating {
			t.Errorf("namespace %s: %v, phase %q; want it terminating throughout", ns, err, ns2.Status.Phase)
		}
		return ctx
	})
	testenv.Test(t, f)
}

// podgroupsErrors is podgroups' count of create errors and controller-runtime's of its reconcile
// errors, as its metrics say now.
func podgroupsErrors(ctx context.Context, t *testing.T) [2]float64 {
	t.Helper()
	body := framework.AddonMetrics(ctx, t, addonName)
	return [2]float64{
		testbed.MetricSum(body, "jobset_addons_podgroups_errors_total", `reason="create"`),
		testbed.MetricSum(body, "controller_runtime_reconcile_errors_total", `controller="podgroups"`),
	}
}
