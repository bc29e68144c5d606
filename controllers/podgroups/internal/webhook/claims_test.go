package webhook

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/pkg/addon/addontest"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// apiserver is a client whose dry-run creates of PodGroups keep or drop spec.resourceClaims, as
// an apiserver with or without DRAWorkloadResourceClaims does, or fail; it counts them.
func apiserver(t *testing.T, keep bool, fail error, calls *int) client.Client {
	t.Helper()
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return fake.NewClientBuilder().WithScheme(s).WithInterceptorFuncs(interceptor.Funcs{
		Create: func(_ context.Context, _ client.WithWatch, o client.Object, opts ...client.CreateOption) error {
			*calls++
			co := (&client.CreateOptions{}).ApplyOptions(opts)
			if len(co.DryRun) == 0 {
				t.Errorf("a create that is not a dry run: %T %s", o, o.GetGenerateName())
			}
			if fail != nil {
				return fail
			}
			if !keep {
				o.(*schedulingv1beta1.PodGroup).Spec.ResourceClaims = nil
			}
			return nil
		},
	}).Build()
}

// claimed is a JobSet asking for scheduler kubernetes whose ReplicatedJob "big" has one Job of
// pods pods sharing a per-Job claim.
func claimed(pods int32, replicas int32) *jobsetv1alpha2.JobSet {
	return addontest.JobSet("ns", "train").Annotate(schedulerKey, "kubernetes").ReplicatedJobs(
		addontest.ReplicatedJob("big").Replicas(replicas).Parallelism(pods).
			JobAnnotation(contract.TemplatesAnnotationKey, `[{metadata: {name: data}, spec: {}}]`),
	).Obj()
}

func TestClaimsRefusal(t *testing.T) {
	templatesPath := contract.ReplicatedJobAnnotationPath(0, contract.TemplatesAnnotationKey).String()
	for name, tc := range map[string]struct {
		js       *jobsetv1alpha2.JobSet
		keep     bool
		fail     error
		wantErrs []string
		message  string
		probes   int
	}{
		"300 pods, the apiserver drops a PodGroup's claims (gate off)": {
			js: claimed(300, 1), wantErrs: []string{fe(field.ErrorTypeForbidden, templatesPath)}, message: "drops a PodGroup's spec.resourceClaims: it needs the feature gate DRAWorkloadResourceClaims", probes: 1,
		},
		"300 pods, the apiserver keeps them (gate on)": {js: claimed(300, 1), keep: true, probes: 1},
		"300 pods, the dry run fails": {
			js: claimed(300, 1), fail: errors.New("connection refused"), wantErrs: []string{fe(field.ErrorTypeForbidden, templatesPath)}, message: "connection refused", probes: 1,
		},
		"256 pods: per pod is enough, no probe":              {js: claimed(256, 1)},
		"300 pods in each of 2 Jobs: no PodGroup of one Job": {js: claimed(300, 2)}, // resourceclaims refuses it
	} {
		t.Run(name, func(t *testing.T) {
			calls := 0
			w := hook(contract.SchedulerKubernetes)
			w.Claims = &ClaimsProbe{Client: apiserver(t, tc.keep, tc.fail, &calls), Clock: clocktesting.NewFakePassiveClock(time.Now())}
			_, errs := w.Validate(context.Background(), tc.js)
			var got []string
			for _, e := range errs {
				got = append(got, fe(e.Type, e.Field))
			}
			if strings.Join(got, ",") != strings.Join(tc.wantErrs, ",") {
				t.Errorf("errors %v, want %v", errs, tc.wantErrs)
			}
			if !strings.Contains(fmt.Sprint(errs), tc.message) {
				t.Errorf("errors %v do not say %q", errs, tc.message)
			}
			if calls != tc.probes {
				t.Errorf("%d dry runs, want %d", calls, tc.probes)
			}
		})
	}
}

func TestClaimsProbeKeepsItsAnswer(t *testing.T) {
	calls := 0
	clock := clocktesting.NewFakePassiveClock(time.Now())
	p := &ClaimsProbe{Client: apiserver(t, false, nil, &calls), Clock: clock}
	for range 3 {
		if kept, _ := p.Kept(context.Background(), "ns"); kept {
			t.Fatal("kept, from an apiserver that drops the claims")
		}
	}
	if calls != 1 {
		t.Errorf("%d dry runs within %s, want 1", calls, ClaimsProbeTTL)
	}
	clock.SetTime(clock.Now().Add(ClaimsProbeTTL))
	p.Kept(context.Background(), "ns")
	if calls != 2 {
		t.Errorf("%d dry runs once %s passed, want 2", calls, ClaimsProbeTTL)
	}
	failing := &ClaimsProbe{Client: apiserver(t, true, errors.New("timeout"), &calls), Clock: clock}
	failing.Kept(context.Background(), "ns")
	failing.Kept(context.Background(), "ns")
	if calls != 4 {
		t.Errorf("%d dry runs, want a failed one not kept (4)", calls)
	}
}
