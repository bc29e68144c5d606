package testbed

import (
	"bytes"
	"context"
	"fmt"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"
)

// WebhookEdits are changes made to webhook configurations before they are applied.
type WebhookEdits struct {
	// Prefix is put before each configuration's name.
	Prefix string
	// PodSelector, when set, becomes the objectSelector of every webhook on pods.
	PodSelector *metav1.LabelSelector
}

// RegisterWebhooks applies the Mutating and ValidatingWebhookConfigurations of manifests (a
// multi-document YAML: a chart's render, a release's manifests), calling the webhook server at
// base (https://127.0.0.1:PORT) with the CA caPEM instead of the in-cluster Service. It returns
// the names of the configurations it applied, by kind.
func RegisterWebhooks(ctx context.Context, cs kubernetes.Interface, manifests []byte, base string, caPEM []byte, edits WebhookEdits) error {
	clientConfig := func(cc *admissionv1.WebhookClientConfig) {
		path := ""
		if cc.Service != nil && cc.Service.Path != nil {
			path = *cc.Service.Path
		}
		cc.Service = nil
		cc.URL = ptr.To(base + path)
		cc.CABundle = caPEM
	}
	onPods := func(rules []admissionv1.RuleWithOperations) bool {
		for _, r := range rules {
			for _, res := range r.Resources {
				if res == "pods" {
					return true
				}
			}
		}
		return false
	}
	edit := func(cc *admissionv1.WebhookClientConfig, rules []admissionv1.RuleWithOperations, selector **metav1.LabelSelector) {
		clientConfig(cc)
		if edits.PodSelector != nil && onPods(rules) {
			*selector = edits.PodSelector
		}
	}
	return eachWebhookConfiguration(manifests, func(m *admissionv1.MutatingWebhookConfiguration) error {
		m.Name = edits.Prefix + m.Name
		for i := range m.Webhooks {
			edit(&m.Webhooks[i].ClientConfig, m.Webhooks[i].Rules, &m.Webhooks[i].ObjectSelector)
		}
		return upsert(ctx, cs.AdmissionregistrationV1().MutatingWebhookConfigurations(), m)
	}, func(v *admissionv1.ValidatingWebhookConfiguration) error {
		v.Name = edits.Prefix + v.Name
		for i := range v.Webhooks {
			edit(&v.Webhooks[i].ClientConfig, v.Webhooks[i].Rules, &v.Webhooks[i].ObjectSelector)
		}
		return upsert(ctx, cs.AdmissionregistrationV1().ValidatingWebhookConfigurations(), v)
	})
}

// DeleteWebhooks deletes the webhook configurations of manifests.
func DeleteWebhooks(ctx context.Context, cs kubernetes.Interface, manifests []byte) error {
	return eachWebhookConfiguration(manifests, func(m *admissionv1.MutatingWebhookConfiguration) error {
		return ignoreNotFound(cs.AdmissionregistrationV1().MutatingWebhookConfigurations().Delete(ctx, m.Name, metav1.DeleteOptions{}))
	}, func(v *admissionv1.ValidatingWebhookConfiguration) error {
		return ignoreNotFound(cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(ctx, v.Name, metav1.DeleteOptions{}))
	})
}

func eachWebhookConfiguration(manifests []byte, mutating func(*admissionv1.MutatingWebhookConfiguration) error, validating func(*admissionv1.ValidatingWebhookConfiguration) error) error {
	return eachKind(manifests, map[string]func([]byte) error{
		"MutatingWebhookConfiguration":   decoded(mutating),
		"ValidatingWebhookConfiguration": decoded(validating),
	})
}

// eachKind calls, for each document of manifests (a multi-document YAML) whose kind is a key of
// fns, that kind's function with the document.
func eachKind(manifests []byte, fns map[string]func(doc []byte) error) error {
	for _, doc := range bytes.Split(manifests, []byte("\n---")) {
		var meta metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			return err
		}
		if fn, ok := fns[meta.Kind]; ok {
			if err := fn(doc); err != nil {
				return fmt.Errorf("%s: %w", meta.Kind, err)
			}
		}
	}
	return nil
}

// decoded is fn of a document decoded strictly into a T.
func decoded[T any](fn func(*T) error) func([]byte) error {
	return func(doc []byte) error {
		var o T
		if err := yaml.UnmarshalStrict(doc, &o); err != nil {
			return err
		}
		return fn(&o)
	}
}

func ignoreNotFound(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
