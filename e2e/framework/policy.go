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
)

// RefusedMessage is the message of the ValidatingAdmissionPolicy RefuseRealCreates makes.
const RefusedMessage = "this cluster no longer accepts such objects"

// RefuseRealCreates makes a ValidatingAdmissionPolicy, bound with Deny, that lets dry runs
// through and refuses (422) every real create of the resource (group, resource) labelled
// label=value: an object an add-on's admission dry run accepts and its create is refused, as a
// template an upgraded API server no longer accepts would be. It waits until probe (such an
// object, created for real) is refused, and deletes the policy when the test ends.
func RefuseRealCreates(ctx context.Context, t *testing.T, c client.Client, group, resource, label, value string, probe func() client.Object) {
	t.Helper()
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "e2e-refuse-real-" + resource + "-" + value},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{
				ObjectSelector: &metav1.LabelSelector{MatchLabels: map[string]string{label: value}},
				ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{group}, APIVersions: []string{"*"}, Resources: []string{resource}},
				}}},
			},
			Validations: []admissionregistrationv1.Validation{{Expression: "request.dryRun == true", Message: RefusedMessage}},
		},
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: policy.Name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName: policy.Name, ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
		},
	}
	CreateAll(ctx, t, c, policy, binding)
	t.Cleanup(func() { _ = c.Delete(context.Background(), binding); _ = c.Delete(context.Background(), policy) })
	// The policy takes effect once the API server has loaded it.
	Eventually(ctx, t, 30*time.Second, "the policy in effect", func(ctx context.Context) (bool, string, error) {
		obj := probe()
		err := c.Create(ctx, obj)
		if err == nil {
			_ = c.Delete(ctx, obj)
			return false, "created", nil
		}
		return strings.Contains(err.Error(), RefusedMessage), err.Error(), nil
	})
}
