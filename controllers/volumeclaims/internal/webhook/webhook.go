// Package webhook holds the volumeclaims admission webhooks: on JobSet CREATE a mutating webhook
// that injects the shared volumes, the per-pod scope label and the admission marker, and a
// validating webhook that refuses bad policies with field paths; on JobSet UPDATE the same
// validating webhook keeps the policies immutable; on Pod CREATE a mutating webhook that adds
// each pod's own per-pod volumes. What they inject comes from package volumeclaims
// (pkg/addon/checks/volumeclaims), so the webhooks, the reconciler and the tests agree on
// every name.
package webhook

import (
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/pkg/addon"
)

// Paths the webhook server serves, for the webhook configurations of the Helm chart and the
// e2e harness.
const (
	// MutateJobSetPath is the JobSet mutating webhook (CREATE).
	MutateJobSetPath = addon.MutateJobSetPath
	// ValidateJobSetPath is the JobSet validating webhook (CREATE and UPDATE).
	ValidateJobSetPath = addon.ValidateJobSetPath
	// MutatePodPath is the Pod mutating webhook (CREATE), scoped by the per-pod label.
	MutatePodPath = "/mutate--v1-pod"
)

// DryRunRemember is how long the JobSet webhook treats a PVC template that the API server
// accepted in a dry run as accepted, in its namespace: JobSets made from one template in a burst
// are checked once.
const DryRunRemember = 10 * time.Second

// Register adds the three webhooks to mgr's webhook server. The manager's scheme must know the
// JobSet types (jobsetv1alpha2.AddToScheme). The JobSet webhook's dry runs, and the PVCs the
// Pod webhook makes, go through a client of their own, with a rate limit of their own (qps,
// burst), so that admission never waits behind the reconciler's API calls.
func Register(mgr ctrl.Manager, qps float32, burst int) error {
	c, err := addon.NewDryRunClient(mgr, qps, burst)
	if err != nil {
		return err
	}
	hook := &JobSetWebhook{DryRun: &addon.DryRunner{Client: c, Name: "volumeclaims", Remember: DryRunRemember}, Claims: mgr.GetCache()}
	if err := addon.RegisterJobSetWebhooks(mgr, &jobsetv1alpha2.JobSet{}, hook); err != nil {
		return err
	}
	mgr.GetWebhookServer().Register(MutatePodPath, &admission.Webhook{Handler: addon.CountRefusals("pod", &PodWebhook{Claims: mgr.GetCache(), JobSets: mgr.GetCache(), Client: c})})
	return nil
}
