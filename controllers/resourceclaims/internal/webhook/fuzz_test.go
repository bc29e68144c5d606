package webhook

import (
	"encoding/json"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/jobset-addons/jobset-addons/pkg/addon"
	"github.com/jobset-addons/jobset-addons/pkg/addon/addontest"
)

// FuzzJobSetWebhook: the validating JobSet webhook, from the KEP-762 examples, with its dry runs
// answered by a fake API server (addontest.DryRunClient).
func FuzzJobSetWebhook(f *testing.F) {
	s := addontest.JobSetScheme(f)
	addontest.FuzzWebhooks(f, addontest.Examples(f, "../../../../examples/resourceclaims", "JobSet"), map[string]*admission.Webhook{
		"validate JobSet": admission.WithValidator(s, &JobSetWebhook{Gates: gates(f, true), DryRun: &addon.DryRunner{Client: addontest.DryRunClient(), Name: "resourceclaims"}}),
	})
}

// FuzzJobWebhook: the Job webhook, from a Job of the KEP-762 example.
func FuzzJobWebhook(f *testing.F) {
	raw, err := json.Marshal(testJob(`[{metadata: {name: imex}, spec: {}, containers: [worker]}, {metadata: {name: data}, spec: {}}]`))
	if err != nil {
		f.Fatal(err)
	}
	addontest.FuzzWebhooks(f, [][]byte{raw}, map[string]*admission.Webhook{"mutate Job": {Handler: &JobWebhook{Gates: gates(f, true)}}})
}
