// Package webhook holds the resourceclaims admission webhooks: a validating webhook on JobSet
// CREATE and UPDATE that refuses bad templates with field paths and keeps them immutable, and
// a mutating webhook on Job CREATE that adds to a JobSet Job's pod template the claims its
// templates give it, and denies a Job one of whose claims another Job holds. What they add
// comes from package claims, so the webhooks, the reconciler and the tests agree on every name.
package webhook

import (
	"fmt"
	"time"

	"k8s.io/component-base/featuregate"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/pkg/addon"
)

// DryRunRemember is how long the JobSet webhook takes a claim template the API server accepted
// in a dry run for accepted, in its namespace: JobSets made from one template in a burst are
// checked once.
const DryRunRemember = 10 * time.Second

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
// behind the reconciler's API calls; an accepted template is not dry-run again for
// DryRunRemember. The Job webhook reads claims and JobSets from the manager's cache, and makes
// claims, and reads a JobSet the cache does not show yet, through that client.
func Register(mgr ctrl.Manager, gates featuregate.FeatureGate, qps float32, burst int) error {
	c, err := addon.NewDryRunClient(mgr, qps, burst)
	if err != nil {
		return err
	}
	dryRun := &addon.DryRunner{Client: c, Name: "resourceclaims", Remember: DryRunRemember}
	err = ctrl.NewWebhookManagedBy(mgr, &jobsetv1alpha2.JobSet{}).
		WithValidator(&JobSetWebhook{DryRun: dryRun, Gates: gates}).
		WithValidatorCustomPath(ValidateJobSetPath).
		Complete()
	if err != nil {
		return fmt.Errorf("registering the JobSet webhook: %w", err)
	}
	mgr.GetWebhookServer().Register(MutateJobPath, &admission.Webhook{Handler: addon.CountRefusals("job", &JobWebhook{Gates: gates, Claims: mgr.GetCache(), JobSets: mgr.GetCache(), Client: c})})
	return nil
}
