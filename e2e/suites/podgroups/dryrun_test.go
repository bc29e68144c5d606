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
	"k8s.io/utils/ptr"
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
		policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: "e2e-small-gangs-" + ns},
			Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
				FailurePolicy: ptr.To(admissionregistrationv1.Fail),
				MatchConstraints: &admissionregistrationv1.MatchResources{
					NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: ns}},
					ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
						Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
						Rule:       admissionregistrationv1.Rule{APIGroups: []string{"scheduling.x-k8s.io"}, APIVersions: []string{"*"}, Resources: []string{"podgroups"}},
					}}},
				},
				Validations: []admissionregistrationv1.Validation{{Expression: "object.spec.minMember <= 2", Message: message}},
			},
		}
		binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
			ObjectMeta: metav1.ObjectMeta{Name: policy.Name},
			Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
				PolicyName: policy.Name, ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
			},
		}
		framework.CreateAll(ctx, t, c, policy, binding)
		t.Cleanup(func() { _ = c.Delete(context.Background(), binding); _ = c.Delete(context.Background(), policy) })

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
