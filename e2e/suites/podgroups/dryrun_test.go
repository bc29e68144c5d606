package podgroups_test

import (
	"context"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/jobset-addons/jobset-addons/e2e/framework"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// TestGangObjectsDryRun: the podgroups webhook has the API server judge a new JobSet's gang
// objects by dry run. A cluster's policy that refuses them (a ValidatingAdmissionPolicy: gangs
// of at most 2 pods) refuses the JobSet at once, at the scheduler annotation, with the policy's
// message, instead of a JobSet whose PodGroup is never made; a gang within the policy is
// admitted. A namespace whose quota has no room for a PodGroup now admits the JobSet with a
// Warning (quota may free up: a JobSet queued by Kueue waits for it by design).
func TestGangObjectsDryRun(t *testing.T) {
	const message = "this cluster gang-schedules at most 2 pods"
	f := framework.NamespacedFeature("gang objects judged by the API server at admission", "refused, admitted, warned", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		c := framework.Client(t, cfg)
		ns := framework.NamespaceFrom(ctx)
		framework.DenyPolicy(ctx, t, c, "e2e-small-gangs-"+ns, admissionregistrationv1.MatchResources{
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: ns}},
			ResourceRules:     framework.RulesOf("scheduling.x-k8s.io", "podgroups", admissionregistrationv1.Create),
		}, "object.spec.minMember <= 2", message)

		// The policy takes effect once the API server has loaded it: until the big gang is refused.
		framework.Eventually(ctx, t, 30*time.Second, "the policy in effect", func(ctx context.Context) (bool, string, error) {
			js := newJobSet(ns, "big", contract.SchedulerCoscheduling).ReplicatedJobs(replicated("a", 1, 3, "1s")).Obj()
			err := c.Create(ctx, js)
			if err == nil {
				_ = c.Delete(ctx, js)
				return false, "admitted", nil
			}
			return true, err.Error(), nil
		})
		big := newJobSet(ns, "big", contract.SchedulerCoscheduling).ReplicatedJobs(replicated("a", 1, 3, "1s")).Obj()
		framework.ExpectRefusedAt(ctx, t, c, big, "vjobset.podgroups.jobset-addons.io", []string{schedulerPath})
		if err := c.Create(ctx, big.DeepCopy()); err == nil || !strings.Contains(err.Error(), message) {
			t.Errorf("refusal %v does not give the policy's message %q", err, message)
		}
		small := newJobSet(ns, "small", contract.SchedulerCoscheduling).ReplicatedJobs(replicated("a", 1, 2, "1s")).Obj()
		framework.ExpectDryRunWarning(t, framework.CreateWithWarnings(ctx, t, cfg, small), "podgroups:", "")

		// No room for one more PodGroup in the namespace: admitted, with a Warning.
		framework.CreateQuota(ctx, t, c, &corev1.ResourceQuota{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "no-gangs"},
			Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{"count/podgroups.scheduling.x-k8s.io": resource.MustParse("0")}},
		})
		// (A gang of 1, not 2: the webhook takes what it accepted in this namespace less than
		// 10 s ago as accepted, DryRunRemember.)
		full := newJobSet(ns, "full", contract.SchedulerCoscheduling).ReplicatedJobs(replicated("a", 1, 1, "1s")).Obj()
		framework.ExpectDryRunWarning(t, framework.CreateWithWarnings(ctx, t, cfg, full), "podgroups:", "quota")
		return ctx
	})
	testenv.Test(t, f)
}
