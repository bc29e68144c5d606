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
	for _, tc := range []struct {
		target string
		build  func(value string) *jobsetv1alpha2.JobSet
		bad    func(value string) bool
	}{
		{
			target: "FuzzParseScheduler",
			build: func(v string) *jobsetv1alpha2.JobSet {
				return base().Annotation(contract.SchedulerAnnotationKey, v).Obj()
			},
			bad: func(v string) bool {
				_, errs := contract.ParseScheduler(v, contract.JobSetAnnotationPath(contract.SchedulerAnnotationKey))
				return len(errs) > 0
			},
		},
		{
			target: "FuzzParseNetworkTopology",
			build: func(v string) *jobsetv1alpha2.JobSet {
				return base().Annotate(contract.SchedulerAnnotationKey, string(contract.SchedulerVolcano), contract.NetworkTopologyAnnotationKey, v).Obj()
			},
			bad: func(v string) bool {
				_, errs := contract.ParseNetworkTopology(v, contract.JobSetAnnotationPath(contract.NetworkTopologyAnnotationKey))
				return len(errs) > 0
			},
		},
	} {
		t.Run(tc.target, func(t *testing.T) {
			values := addontest.Corpus(t, "../../../../pkg/contract/testdata/fuzz/"+tc.target)
			if refused := addontest.LintAgrees(t, values, tc.build, admit, checks.Check, tc.bad); refused == 0 {
				t.Errorf("none of the %d values was refused", len(values))
			}
		})
	}
}
