package webhook

import (
	"context"
	"testing"

	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/pkg/addon/addontest"
	"github.com/jobset-addons/jobset-addons/pkg/addon/checks"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// TestLintAgrees: on each value of the fuzz corpora of the scheduler and network-topology
// parsers, on a sequenced JobSet whose Jobs share claims, kubectl jobset-addons lint refuses
// with the fields and messages of this webhook's refusal (every scheduler's CRD installed,
// CompositePodGroup served) and gives its Warnings (coscheduling's); every value the parser
// refuses is refused.
func TestLintAgrees(t *testing.T) {
	base := func() *addontest.JobSetWrapper {
		return addontest.JobSet("default", "train").InOrder().ReplicatedJobs(
			addontest.ReplicatedJob("initializer"),
			addontest.ReplicatedJob("node").Replicas(2).Pods(2).JobAnnotation(contract.TemplatesAnnotationKey, `[{metadata: {name: gpu}, spec: {}}]`),
		)
	}
	admit := func(js *jobsetv1alpha2.JobSet) ([]string, error) {
		w := hook(contract.SchedulerVolcano, contract.SchedulerCoscheduling, contract.SchedulerKubernetes)
		w.Composites = true
		if err := w.Default(context.Background(), js); err != nil {
			return nil, err
		}
		return w.ValidateCreate(context.Background(), js)
	}
	addontest.LintAgreesOnCorpora(t, "../../../../pkg/contract/testdata/fuzz", admit, checks.Check,
		addontest.CorpusCase{
			Target: "FuzzParseScheduler",
			Build: func(v string) *jobsetv1alpha2.JobSet {
				return base().Annotation(contract.SchedulerAnnotationKey, v).Obj()
			},
			Bad: func(v string) bool {
				_, errs := contract.ParseScheduler(v, contract.JobSetAnnotationPath(contract.SchedulerAnnotationKey))
				return len(errs) > 0
			},
		},
		addontest.CorpusCase{
			Target: "FuzzParseNetworkTopology",
			Build: func(v string) *jobsetv1alpha2.JobSet {
				return base().Annotate(contract.SchedulerAnnotationKey, string(contract.SchedulerVolcano), contract.NetworkTopologyAnnotationKey, v).Obj()
			},
			Bad: func(v string) bool {
				_, errs := contract.ParseNetworkTopology(v, contract.JobSetAnnotationPath(contract.NetworkTopologyAnnotationKey))
				return len(errs) > 0
			},
		},
	)
}
