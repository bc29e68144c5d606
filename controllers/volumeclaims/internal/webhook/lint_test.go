package webhook

import (
	"context"
	"testing"

	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/pkg/addon/addontest"
	"github.com/jobset-addons/jobset-addons/pkg/addon/checks"
	"github.com/jobset-addons/jobset-addons/pkg/addon/checks/volumeclaims"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// TestLintAgrees: on each value of the policies parser's fuzz corpus, on a JobSet whose two
// ReplicatedJobs mount the volumes the corpus names, kubectl jobset-addons lint refuses with
// the fields and messages of this webhook's refusal and gives its Warnings; every value the
// parser refuses is refused.
func TestLintAgrees(t *testing.T) {
	admit := func(js *jobsetv1alpha2.JobSet) ([]string, error) {
		w := &JobSetWebhook{}
		if err := w.Default(context.Background(), js); err != nil {
			t.Fatal(err)
		}
		return w.ValidateCreate(context.Background(), js)
	}
	addontest.LintAgreesOnCorpora(t, "../../../../pkg/contract/testdata/fuzz", admit, checks.Check, addontest.CorpusCase{
		Target: "FuzzParseVolumeClaimPolicies",
		Build: func(value string) *jobsetv1alpha2.JobSet {
			return addontest.JobSet("default", "train").Annotation(contract.PoliciesAnnotationKey, value).ReplicatedJobs(
				addontest.ReplicatedJob("initializer").Mount("data", "d", "x"),
				addontest.ReplicatedJob("node").Replicas(2).Pods(2).Mount("data", "checkpoint"),
			).Obj()
		},
		Bad: func(value string) bool {
			_, errs := contract.ParseVolumeClaimPolicies(value, volumeclaims.AnnotationPath)
			return len(errs) > 0
		},
	})
}
