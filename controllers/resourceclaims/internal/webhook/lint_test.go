package webhook

import (
	"context"
	"testing"

	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/pkg/addon/addontest"
	"github.com/jobset-addons/jobset-addons/pkg/addon/checks"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// TestLintAgrees: on each value of the templates parser's fuzz corpus, on a ReplicatedJob of a
// JobSet Kueue queues, kubectl jobset-addons lint refuses with the fields and messages of this
// webhook's refusal and gives its Warnings; every value the parser refuses is refused.
func TestLintAgrees(t *testing.T) {
	admit := func(js *jobsetv1alpha2.JobSet) ([]string, error) {
		return (&JobSetWebhook{Gates: gates(t, true)}).ValidateCreate(context.Background(), js)
	}
	addontest.LintAgreesOnCorpora(t, "../../../../pkg/contract/testdata/fuzz", admit, checks.Check, addontest.CorpusCase{
		Target: "FuzzParseResourceClaimTemplates",
		Build: func(value string) *jobsetv1alpha2.JobSet {
			js := testJobSet(value, nil)
			js.Labels = map[string]string{contract.KueueQueueNameLabelKey: "team-a"}
			return js
		},
		Bad: func(value string) bool {
			_, errs := contract.ParseResourceClaimTemplates(value, contract.ReplicatedJobAnnotationPath(1, contract.TemplatesAnnotationKey))
			return len(errs) > 0
		},
	})
}
