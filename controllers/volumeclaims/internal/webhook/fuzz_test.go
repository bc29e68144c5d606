package webhook

import (
	"encoding/json"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/jobset-addons/jobset-addons/pkg/addon"
	"github.com/jobset-addons/jobset-addons/pkg/addon/addontest"
)

// FuzzJobSetWebhooks: the mutating and validating JobSet webhooks, from the KEP-572 stories, with
// their dry runs answered by a fake API server (addontest.DryRunClient).
func FuzzJobSetWebhooks(f *testing.F) {
	s, w := addontest.JobSetScheme(f), &JobSetWebhook{DryRun: &addon.DryRunner{Client: addontest.DryRunClient(), Name: "volumeclaims"}}
	addontest.FuzzWebhooks(f, addontest.Examples(f, "../../../../examples/volumeclaims", "JobSet"), map[string]*admission.Webhook{
		"mutate JobSet":   admission.WithDefaulter(s, w),
		"validate JobSet": admission.WithValidator(s, w),
	})
}

// FuzzPodWebhook: the Pod webhook, from pods of the KEP-572 stories.
func FuzzPodWebhook(f *testing.F) {
	var seeds [][]byte
	for _, p := range []*addontest.PodWrapper{
		pod("distributed-trainjob", "node", 3, 1, "checkpoint-storage"), pod("train", "w", 0, 12, "ckpt,scratch-b"),
	} {
		raw, err := json.Marshal(p.Obj())
		if err != nil {
			f.Fatal(err)
		}
		seeds = append(seeds, raw)
	}
	addontest.FuzzWebhooks(f, seeds, map[string]*admission.Webhook{"mutate Pod": {Handler: &PodWebhook{}}})
}
