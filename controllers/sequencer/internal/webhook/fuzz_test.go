package webhook

import (
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/jobset-addons/jobset-addons/pkg/addon/addontest"
)

// FuzzJobSetWebhooks: the mutating and validating JobSet webhooks, from the KEP-672 examples.
func FuzzJobSetWebhooks(f *testing.F) {
	s := addontest.JobSetScheme(f)
	w := &JobSetWebhook{}
	addontest.FuzzWebhooks(f, addontest.Examples(f, "../../../../examples/sequencer", "JobSet"), map[string]*admission.Webhook{
		"mutate JobSet":   admission.WithDefaulter(s, w),
		"validate JobSet": admission.WithValidator(s, w),
	})
}
