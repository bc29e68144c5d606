// Package webhook holds the resourceclaims admission webhooks: a validating webhook on JobSet
// CREATE and UPDATE that refuses bad templates with field paths and keeps them immutable, and
// a mutating webhook on Job CREATE that adds to a JobSet Job's pod template the claims its
// templates give it. What they add comes from package claims, so the webhooks, the reconciler
// and the tests agree on every name.
package webhook

import (
	"fmt"

	"k8s.io/client-go/rest"
	"k8s.io/component-base/featuregate"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
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
// JobSet types (jobsetv1alpha2.AddToScheme). The JobSet webhook's dry runs go through a client
// of their own, with a rate limit of their own (qps, burst), so that admission never waits
// behind the reconciler's API calls.
func Register(mgr ctrl.Manager, gates featuregate.FeatureGate, qps float32, burst int) error {
	rc := rest.CopyConfig(mgr.GetConfig())
	rc.QPS, rc.Burst = qps, burst
	c, err := client.New(rc, client.Options{Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper()})
	if err != nil {
		return err
	}
	err = ctrl.NewWebhookManagedBy(mgr, &jobsetv1alpha2.JobSet{}).
		WithValidator(&JobSetWebhook{Client: c, Gates: gates}).
		WithValidatorCustomPath(ValidateJobSetPath).
		Complete()
	if err != nil {
		return fmt.Errorf("registering the JobSet webhook: %w", err)
	}
	mgr.GetWebhookServer().Register(MutateJobPath, &admission.Webhook{Handler: &JobWebhook{Gates: gates}})
	return nil
}
