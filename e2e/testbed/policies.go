package testbed

import (
	"bytes"
	"context"
	"fmt"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"
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
	for _, doc := range bytes.Split(manifests, []byte("\n---")) {
		var meta metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			return err
		}
		var err error
		switch meta.Kind {
		case "ValidatingAdmissionPolicy":
			var p admissionv1.ValidatingAdmissionPolicy
			if err = yaml.UnmarshalStrict(doc, &p); err == nil {
				err = policy(&p)
			}
		case "ValidatingAdmissionPolicyBinding":
			var b admissionv1.ValidatingAdmissionPolicyBinding
			if err = yaml.UnmarshalStrict(doc, &b); err == nil {
				err = binding(&b)
			}
		}
		if err != nil {
			return fmt.Errorf("%s: %w", meta.Kind, err)
		}
	}
	return nil
}
