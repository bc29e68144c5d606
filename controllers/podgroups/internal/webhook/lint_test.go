package webhook

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/controllers/podgroups/internal/backend"
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
		w.CompositeKind = backend.CompositeKinds[1]
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

// TestLintAgreesForeignGangs: on a JobSet whose pod templates already name a gang podgroups
// would not name (podgroups.ForeignGangs), for each scheduler asked for and each scheduler's
// place of the gang's name, by a user or by a TrainJob, kubectl jobset-addons lint refuses with the
// fields and messages of the mutating webhook's refusal; podgroups' own names, re-created, are
// admitted by both.
func TestLintAgreesForeignGangs(t *testing.T) {
	// A value is "SCHEDULER PLACE NAME OWNER": the scheduler asked for, where the pod templates
	// name the gang NAME (label, annotation, group), and "trainjob" when a TrainJob owns the JobSet.
	build := func(v string) *jobsetv1alpha2.JobSet {
		f := strings.Fields(v)
		w := addontest.JobSet("default", "train").Annotation(contract.SchedulerAnnotationKey, f[0]).ReplicatedJobs(
			addontest.ReplicatedJob("node").Replicas(2).Pods(2),
		)
		if f[3] == "trainjob" {
			w.OwnedByTrainJob("train")
		}
		pt := w.PodTemplate(0)
		switch f[1] {
		case "label":
			pt.Labels = map[string]string{contract.CoschedulingPodGroupLabelKey: f[2]}
		case "annotation":
			pt.Annotations = map[string]string{contract.VolcanoGroupNameAnnotationKey: f[2]}
		case "group":
			pt.Spec.SchedulingGroup = &corev1.PodSchedulingGroup{PodGroupName: ptr.To(f[2])}
		}
		return w.Obj()
	}
	admit := func(js *jobsetv1alpha2.JobSet) ([]string, error) {
		w := hook(contract.SchedulerVolcano, contract.SchedulerCoscheduling, contract.SchedulerKubernetes)
		if err := w.Default(context.Background(), js); err != nil {
			return nil, err
		}
		return w.ValidateCreate(context.Background(), js)
	}
	foreign := []string{
		"coscheduling label someone-elses user",
		"coscheduling label train trainjob",
		"coscheduling annotation train user",
		"volcano annotation other user",
		"volcano annotation train trainjob",
		"volcano group train user",
		"kubernetes group other user",
		"kubernetes group train trainjob",
		"kubernetes label train user",
	}
	if refused := addontest.LintAgrees(t, foreign, build, admit, checks.Check, func(string) bool { return true }); refused != len(foreign) {
		t.Errorf("%d of the %d foreign gangs refused, want all", refused, len(foreign))
	}
	own := []string{"coscheduling label train user", "volcano annotation train user", "kubernetes group train user"}
	if refused := addontest.LintAgrees(t, own, build, admit, checks.Check, func(string) bool { return false }); refused != 0 {
		t.Errorf("%d of podgroups' own names refused, want none", refused)
	}
}
