package webhook

import (
	"context"
	"testing"

	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/pkg/addon/addontest"
	"github.com/jobset-addons/jobset-addons/pkg/addon/checks"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// TestLintAgrees: on each value of the fuzz corpora of the depends-on, execution-policy and
// wait-for parsers, on a JobSet Kueue queues with a start barrier, kubectl jobset-addons lint
// refuses with the fields and messages of this webhook's refusal and gives its Warnings (the
// staged barrier's, Kueue's); every value the parser refuses is refused.
func TestLintAgrees(t *testing.T) {
	base := func() *addontest.JobSetWrapper {
		return addontest.JobSet("default", "train").Label(contract.KueueQueueNameLabelKey, "team-a").
			Annotation(contract.StartBarrierAnnotationKey, string(contract.StartBarrierJobSet))
	}
	admit := func(js *jobsetv1alpha2.JobSet) ([]string, error) {
		w := &JobSetWebhook{Barrier: testBarrier}
		if err := w.Default(context.Background(), js); err != nil {
			t.Fatal(err)
		}
		return w.ValidateCreate(context.Background(), js)
	}
	addontest.LintAgreesOnCorpora(t, "../../../../pkg/contract/testdata/fuzz", admit, checks.Check,
		addontest.CorpusCase{
			Target: "FuzzParseDependsOn",
			Build: func(v string) *jobsetv1alpha2.JobSet {
				return base().ReplicatedJobs(addontest.ReplicatedJob("a"), addontest.ReplicatedJob("b"),
					addontest.ReplicatedJob("c").Replicas(2).DependsOnAnnotation(v)).Obj()
			},
			Bad: func(v string) bool {
				_, errs := contract.ParseDependsOn(v, contract.ReplicatedJobAnnotationPath(2, contract.DependsOnAnnotationKey))
				return len(errs) > 0
			},
		},
		addontest.CorpusCase{
			Target: "FuzzParseExecutionPolicy",
			Build: func(v string) *jobsetv1alpha2.JobSet {
				return base().Annotation(contract.ExecutionPolicyAnnotationKey, v).ReplicatedJobs(addontest.ReplicatedJob("a"), addontest.ReplicatedJob("b")).Obj()
			},
			Bad: func(v string) bool {
				_, errs := contract.ParseExecutionPolicy(v, contract.JobSetAnnotationPath(contract.ExecutionPolicyAnnotationKey))
				return len(errs) > 0
			},
		},
		addontest.CorpusCase{
			Target: "FuzzParseWaitFor",
			Build: func(v string) *jobsetv1alpha2.JobSet {
				return base().InOrder().Annotation(contract.WaitForAnnotationKey, v).ReplicatedJobs(addontest.ReplicatedJob("a"), addontest.ReplicatedJob("b")).Obj()
			},
			Bad: func(v string) bool {
				_, errs := contract.ParseWaitFor(v, contract.JobSetAnnotationPath(contract.WaitForAnnotationKey))
				return len(errs) > 0
			},
		},
	)
}
