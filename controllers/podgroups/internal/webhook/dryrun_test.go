package webhook

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/jobset-addons/jobset-addons/pkg/addon"
	"github.com/jobset-addons/jobset-addons/pkg/addon/addontest"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// TestDryRun: the JobSet webhook has the API server judge the gang objects of a valid JobSet:
// what it refuses for good refuses the JobSet at the scheduler annotation, with its message;
// what may change is a Warning; the objects sent are the reconciler's, one per gang, or the
// Workload alone.
func TestDryRun(t *testing.T) {
	cases := map[string]struct {
		scheduler contract.Scheduler
		answer    error
		wantSent  []string
		wantErrs  []string
		warning   string
	}{
		"volcano, accepted": {
			scheduler: contract.SchedulerVolcano,
			wantSent:  []string{"PodGroup train-stage-0", "PodGroup train-stage-1"},
		},
		"coscheduling, refused by a policy": {
			scheduler: contract.SchedulerCoscheduling,
			answer: apierrors.NewInvalid(schema.GroupKind{Group: "scheduling.x-k8s.io", Kind: "PodGroup"}, "train-stage-0",
				field.ErrorList{field.Invalid(field.NewPath("spec", "minMember"), 1, "gangs of this cluster are at most 0 pods")}),
			wantSent: []string{"PodGroup train-stage-0", "PodGroup train-stage-1"},
			wantErrs: []string{
				fe(field.ErrorTypeInvalid, schedulerPath+".spec.minMember"),
				fe(field.ErrorTypeInvalid, schedulerPath+".spec.minMember"),
			},
		},
		"kubernetes, quota: a Warning": {
			scheduler: contract.SchedulerKubernetes,
			answer:    apierrors.NewForbidden(schema.GroupResource{Group: "scheduling.k8s.io", Resource: "workloads"}, "train", errors.New("exceeded quota: q")),
			wantSent:  []string{"Workload train"},
			warning:   "exceeded quota",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var sent []string
			c := fake.NewClientBuilder().WithInterceptorFuncs(interceptor.Funcs{
				Create: func(_ context.Context, _ client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
					o := &client.CreateOptions{}
					o.ApplyOptions(opts)
					if len(o.DryRun) == 0 {
						t.Errorf("%s created for real", obj.GetName())
					}
					if len(obj.GetOwnerReferences()) > 0 {
						t.Errorf("%s names its JobSet, which has no UID yet", obj.GetName())
					}
					kind := "PodGroup"
					if strings.HasSuffix(strings.ToLower(typeName(obj)), "workload") {
						kind = "Workload"
					}
					sent = append(sent, kind+" "+obj.GetName())
					return tc.answer
				},
			}).Build()
			w := hook(tc.scheduler)
			w.DryRun = &addon.DryRunner{Client: c, Name: "podgroups"}
			js := addontest.JobSet("ns", "train").Annotate(schedulerKey, string(tc.scheduler), inOrderKey, "InOrder").ReplicatedJobs(
				addontest.ReplicatedJob("a").Requests("1", "1Gi"), addontest.ReplicatedJob("b").Requests("1", "1Gi"),
			).Obj()
			warnings, errs := w.Validate(context.Background(), js)
			var got []string
			for _, e := range errs {
				got = append(got, fe(e.Type, e.Field))
			}
			if diff := cmp.Diff(tc.wantErrs, got); diff != "" {
				t.Errorf("errors (-want +got):\n%s\n%v", diff, errs)
			}
			if len(tc.wantErrs) > 0 && !strings.Contains(errs.ToAggregate().Error(), "at most 0 pods") {
				t.Errorf("errors %v do not give the API server's message", errs)
			}
			if diff := cmp.Diff(tc.wantSent, sortedCopy(sent)); diff != "" {
				t.Errorf("dry runs (-want +got):\n%s", diff)
			}
			if tc.warning != "" && (len(warnings) != 1 || !strings.Contains(warnings[0], tc.warning)) {
				t.Errorf("warnings %q, want one that says %q", warnings, tc.warning)
			}
			if tc.warning == "" && len(warnings) != 0 {
				t.Errorf("warnings %q, want none", warnings)
			}
		})
	}
}

func typeName(obj client.Object) string { return fmt.Sprintf("%T", obj) }

func sortedCopy(s []string) []string { return slices.Sorted(slices.Values(s)) }
