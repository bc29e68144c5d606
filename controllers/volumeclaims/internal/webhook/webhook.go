// Package webhook holds the volumeclaims admission webhooks: on JobSet CREATE a mutating webhook
// that injects the shared volumes, the per-pod scope label and the admission marker, and a
// validating webhook that refuses bad policies with field paths; on JobSet UPDATE the same
// validating webhook keeps the policies immutable; on Pod CREATE a mutating webhook that adds
// each pod's own per-pod volumes. What they inject comes from package policy, so the webhooks,
// the reconciler and the tests agree on every name.
package webhook

import (
	"fmt"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
)

// Paths the webhook server serves, for the webhook configurations of the Helm chart and the
// e2e harness.
const (
	// MutateJobSetPath is the JobSet mutating webhook (CREATE).
	MutateJobSetPath = "/mutate-jobset-x-k8s-io-v1alpha2-jobset"
	// ValidateJobSetPath is the JobSet validating webhook (CREATE and UPDATE).
	ValidateJobSetPath = "/validate-jobset-x-k8s-io-v1alpha2-jobset"
	// MutatePodPath is the Pod mutating webhook (CREATE), scoped by the per-pod label.
	MutatePodPath = "/mutate--v1-pod"
)

// Register adds the three webhooks to mgr's webhook server. The manager's scheme must know the
// JobSet types (jobsetv1alpha2.AddToScheme).
func Register(mgr ctrl.Manager) error {
	js := &JobSetWebhook{}
	err := ctrl.NewWebhookManagedBy(mgr, &jobsetv1alpha2.JobSet{}).
		WithDefaulter(js).
		WithDefaulterCustomPath(MutateJobSetPath).
		WithValidator(js).
		WithValidatorCustomPath(ValidateJobSetPath).
		Complete()
	if err != nil {
		return fmt.Errorf("registering the JobSet webhooks: %w", err)
	}
	mgr.GetWebhookServer().Register(MutatePodPath, &admission.Webhook{Handler: &PodWebhook{}})
	return nil
}
