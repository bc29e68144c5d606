package webhook

import (
	"encoding/json"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/jobset-addons/jobset-addons/pkg/addon/addontest"
)

// FuzzJobSetWebhook: the validating JobSet webhook (without its dry runs, which need an
// apiserver), from the KEP-762 examples.
func FuzzJobSetWebhook(f *testing.F) {
	s := addontest.JobSetScheme(f)
	addontest.FuzzWebhooks(f, addontest.Examples(f, "../../../../examples/resourceclaims", "JobSet"), map[string]*admission.Webhook{
		"validate JobSet": admission.WithValidator(s, &JobSetWebhook{Gates: gates(f, true)}),
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
