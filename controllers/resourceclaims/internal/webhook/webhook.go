// Package webhook holds the resourceclaims admission webhooks: a validating webhook on JobSet
// CREATE and UPDATE that refuses bad templates with field paths and keeps them immutable, and
// a mutating webhook on Job CREATE that adds to a JobSet Job's pod template the claims its
// templates give it. What they add comes from package claims, so the webhooks, the reconciler
// and the tests agree on every name.
package webhook

import (
	"fmt"

	"k8s.io/component-base/featuregate"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
)

// Paths the webhook server serves, for the webhook configurations of the Helm chart and the
// e2e harness.
const (
	// ValidateJobSetPath is the JobSet validating webhook (CREATE and UPDATE).
	ValidateJobSetPath = "/validate-jobset-x-k8s-io-v1alpha2-jobset"
	// MutateJobPath is the Job mutating webhook (CREATE), scoped to JobSet Jobs with templates.
	MutateJobPath = "/mutate-batch-v1-job"
)

// Register adds the webhooks to mgr's webhook server. The manager's scheme must know the
// JobSet types (jobsetv1alpha2.AddToScheme).
func Register(mgr ctrl.Manager, gates featuregate.FeatureGate) error {
	err := ctrl.NewWebhookManagedBy(mgr, &jobsetv1alpha2.JobSet{}).
		WithValidator(&JobSetWebhook{Client: mgr.GetClient(), Gates: gates}).
		WithValidatorCustomPath(ValidateJobSetPath).
		Complete()
	if err != nil {
		return fmt.Errorf("registering the JobSet webhook: %w", err)
	}
	mgr.GetWebhookServer().Register(MutateJobPath, &admission.Webhook{Handler: &JobWebhook{Gates: gates}})
	return nil
}
