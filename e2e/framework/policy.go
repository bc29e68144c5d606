package framework

import (
	"context"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
)

// RefuseLabel is the label RefuseRealCreates's policies select objects by.
const RefuseLabel = "e2e.jobset-addons.io/refuse-real"

// RefusedMessage is the message of the ValidatingAdmissionPolicy RefuseRealCreates makes.
const RefusedMessage = "this cluster no longer accepts such objects"

// RefuseRealCreates makes a ValidatingAdmissionPolicy, bound with Deny, that lets dry runs
// through and refuses (422) every real create of the resource (group, resource) labelled
// RefuseLabel=value: an object an add-on's admission dry run accepts and its create is refused, as a
// template an upgraded API server no longer accepts would be. It waits until probe (such an
// object, created for real) is refused, and deletes the policy when the test ends.
func RefuseRealCreates(ctx context.Context, t *testing.T, c client.Client, group, resource, value string, probe func() client.Object) {
	t.Helper()
	DenyPolicy(ctx, t, c, "e2e-refuse-real-"+resource+"-"+value, admissionregistrationv1.MatchResources{
		ObjectSelector: &metav1.LabelSelector{MatchLabels: map[string]string{RefuseLabel: value}},
		ResourceRules:  RulesOf(group, resource, admissionregistrationv1.Create),
	}, "request.dryRun == true", RefusedMessage)
	WaitRefused(ctx, t, c, RefusedMessage, probe)
}

// WaitRefused waits until a policy that refuses with message has taken effect (the API server
// has loaded it): probe, an object it refuses, created for real, is refused. One created
// meanwhile is deleted.
func WaitRefused(ctx context.Context, t *testing.T, c client.Client, message string, probe func() client.Object) {
	t.Helper()
	Eventually(ctx, t, 30*time.Second, "the policy in effect", func(ctx context.Context) (bool, string, error) {
		obj := probe()
		err := c.Create(ctx, obj)
		if err == nil {
			_ = c.Delete(ctx, obj)
			return false, "created", nil
		}
		return strings.Contains(err.Error(), message), err.Error(), nil
	})
}

// DenyPolicy makes the ValidatingAdmissionPolicy name, bound with Deny, that refuses with
// message what match selects unless expression holds, and deletes it when the test ends. It
// does not wait for the API server to load it: each caller knows what shows that.
func DenyPolicy(ctx context.Context, t *testing.T, c client.Client, name string, match admissionregistrationv1.MatchResources, expression, message string) {
	t.Helper()
	DenyValidation(ctx, t, c, name, match, admissionregistrationv1.Validation{Expression: expression, Message: message})
}

// DenyValidation is DenyPolicy with the policy's validation whole (a messageExpression, say).
func DenyValidation(ctx context.Context, t *testing.T, c client.Client, name string, match admissionregistrationv1.MatchResources, validation admissionregistrationv1.Validation) {
	t.Helper()
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy:    ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &match,
			Validations:      []admissionregistrationv1.Validation{validation},
		},
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName: name, ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
		},
	}
	CreateAll(ctx, t, c, policy, binding)
	t.Cleanup(func() { _ = c.Delete(context.Background(), binding); _ = c.Delete(context.Background(), policy) })
}

// RulesOf are the rules of a policy's match that select resource of group, every version, for
// operations.
func RulesOf(group, resource string, operations ...admissionregistrationv1.OperationType) []admissionregistrationv1.NamedRuleWithOperations {
	return []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
		Operations: operations,
		Rule:       admissionregistrationv1.Rule{APIGroups: []string{group}, APIVersions: []string{"*"}, Resources: []string{resource}},
	}}}
}

// ExpectRefusedOnce checks that an add-on tells of objects the API server refuses for the JobSet
// js (RefuseRealCreates) once: one Warning of reason, none of failed, also after 10 s of the
// reconciler's retries; its message says want and the policy's refusal; kubectl jobset-addons
// status shows it, however old.
func ExpectRefusedOnce(ctx context.Context, t *testing.T, cfg *envconf.Config, c client.Client, js *jobsetv1alpha2.JobSet, reason, failed, want string) {
	t.Helper()
	WaitEventCounts(ctx, t, c, js, map[string]int{reason: 1})
	// Retries go on with back-off (5 ms, 10 ms, ... doubling); none tells it again.
	time.Sleep(10 * time.Second)
	WaitEventCounts(ctx, t, c, js, map[string]int{reason: 1, failed: 0})
	msgs, err := EventMessages(ctx, c, js, reason)
	if err != nil || len(msgs) != 1 || !strings.Contains(msgs[0], RefusedMessage) || !strings.Contains(msgs[0], want) {
		t.Errorf("%s messages %q (%v), want one that says %q", reason, msgs, err, want)
	}
	out := AddonsStatus(ctx, t, cfg, js.Namespace, js.Name)
	if !strings.Contains(out, "Refused by the API server") || !strings.Contains(out, reason) {
		t.Errorf("kubectl jobset-addons status does not show the refusal:\n%s", out)
	}
	t.Logf("kubectl jobset-addons status:\n%s", out)
}
