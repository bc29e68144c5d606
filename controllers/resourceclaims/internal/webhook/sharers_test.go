package webhook

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"k8s.io/utils/ptr"

	"github.com/jobset-addons/jobset-addons/pkg/addon/checks/resourceclaims"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// TestValidateUpdateScaleUp: with JobSet's ElasticJobSet, parallelism and completions change on a
// running JobSet; a change that makes a Job run more pods at once than its shared claims serve
// is refused at the templates annotation, as at creation.
func TestValidateUpdateScaleUp(t *testing.T) {
	const one = `[{metadata: {name: a}, spec: {}}]`
	for _, tc := range []struct {
		name                 string
		from, to             int32 // parallelism = completions, before and after
		scheduler, composite bool
		templatesOnOtherRJob bool
		wantRefused          bool
	}{
		{name: "2 to 4", from: 2, to: 4},
		{name: "200 to 256", from: 200, to: 256},
		{name: "200 to 257", from: 200, to: 257, wantRefused: true},
		{name: "256 to 300", from: 256, to: 300, wantRefused: true},
		{name: "4 to 2 (down)", from: 4, to: 2},
		{name: "200 to 300, composite: claims on each Job's PodGroup", from: 200, to: 300, scheduler: true, composite: true},
		{name: "200 to 300 of a ReplicatedJob without templates", from: 200, to: 300, templatesOnOtherRJob: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			old := testJobSet(one, nil)
			old.Annotations = map[string]string{}
			if tc.scheduler {
				old.Annotations[contract.SchedulerAnnotationKey] = "kubernetes"
			}
			if tc.composite {
				old.Annotations[contract.CompositeAnnotationKey] = "true"
			}
			idx := 1 // "workers", with templates
			if tc.templatesOnOtherRJob {
				idx = 0 // "plain"
			}
			spec := &old.Spec.ReplicatedJobs[idx].Template.Spec
			spec.Parallelism, spec.Completions = ptr.To(tc.from), ptr.To(tc.from)
			scaled := old.DeepCopy()
			spec = &scaled.Spec.ReplicatedJobs[idx].Template.Spec
			spec.Parallelism, spec.Completions = ptr.To(tc.to), ptr.To(tc.to)

			errs := resourceclaims.ScaledPastSharers(old, scaled)
			var want []string
			if tc.wantRefused {
				want = []string{path + ": Forbidden"}
			}
			if got := summary(errs); !reflect.DeepEqual(got, want) {
				t.Errorf("errors %v\nwant %v\nfull: %v", got, want, errs)
			}
			w := &JobSetWebhook{Gates: gates(t, true)}
			_, err := w.ValidateUpdate(context.Background(), old, scaled)
			if tc.wantRefused != (err != nil) {
				t.Errorf("ValidateUpdate: %v, want refused %v", err, tc.wantRefused)
			}
			if tc.wantRefused && (err == nil || !strings.Contains(err.Error(), "serves at most 256")) {
				t.Errorf("the refusal does not say why: %v", err)
			}
		})
	}
}
