package testbed

import (
	"context"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// ApplyPolicies applies the ValidatingAdmissionPolicies and their bindings of manifests (a
// chart's render), as a cluster installing the chart has them: the API server runs them
// itself, so they hold whether the add-on runs or not.
func ApplyPolicies(ctx context.Context, cs kubernetes.Interface, manifests []byte) error {
	return eachPolicy(manifests, func(p *admissionv1.ValidatingAdmissionPolicy) error {
		return upsert(ctx, cs.AdmissionregistrationV1().ValidatingAdmissionPolicies(), p)
	}, func(b *admissionv1.ValidatingAdmissionPolicyBinding) error {
		return upsert(ctx, cs.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings(), b)
	})
}

// DeletePolicies deletes the ValidatingAdmissionPolicies and bindings of manifests.
func DeletePolicies(ctx context.Context, cs kubernetes.Interface, manifests []byte) error {
	return eachPolicy(manifests, func(p *admissionv1.ValidatingAdmissionPolicy) error {
		return ignoreNotFound(cs.AdmissionregistrationV1().ValidatingAdmissionPolicies().Delete(ctx, p.Name, metav1.DeleteOptions{}))
	}, func(b *admissionv1.ValidatingAdmissionPolicyBinding) error {
		return ignoreNotFound(cs.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Delete(ctx, b.Name, metav1.DeleteOptions{}))
	})
}

func eachPolicy(manifests []byte, policy func(*admissionv1.ValidatingAdmissionPolicy) error, binding func(*admissionv1.ValidatingAdmissionPolicyBinding) error) error {
	return eachKind(manifests, map[string]func([]byte) error{
		"ValidatingAdmissionPolicy":        decoded(policy),
		"ValidatingAdmissionPolicyBinding": decoded(binding),
	})
}
