package webhook

import (
	"encoding/json"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/jobset-addons/jobset-addons/pkg/addon"
	"github.com/jobset-addons/jobset-addons/pkg/addon/addontest"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// FuzzJobSetWebhooks: the mutating and validating JobSet webhooks, from the KEP-2437 examples,
// with the three backends installed, their gang objects' dry runs answered by a fake API server
// (addontest.DryRunClient).
func FuzzJobSetWebhooks(f *testing.F) {
	s := addontest.JobSetScheme(f)
	w := hook(contract.SchedulerVolcano, contract.SchedulerCoscheduling, contract.SchedulerKubernetes)
	w.DryRun = &addon.DryRunner{Client: addontest.DryRunClient(), Name: "podgroups"}
	addontest.FuzzWebhooks(f, addontest.Examples(f, "../../../../examples/podgroups", "JobSet"), map[string]*admission.Webhook{
		"mutate JobSet":   admission.WithDefaulter(s, w),
		"validate JobSet": admission.WithValidator(s, w),
	})
}

// FuzzJobWebhook: the Job webhook, from a Job of a composite gang.
func FuzzJobWebhook(f *testing.F) {
	raw, err := json.Marshal(compositeJob())
	if err != nil {
		f.Fatal(err)
	}
	addontest.FuzzWebhooks(f, [][]byte{raw}, map[string]*admission.Webhook{"mutate Job": {Handler: &JobWebhook{}}})
}
