package webhook

import (
	"context"
	"strings"
	"testing"

	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/pkg/addon/addontest"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// TestStagedJobSetBarrierWarning: a start barrier of mode JobSet on a JobSet that runs in more
// than one stage (the sequencer's annotations, upstream dependsOn or startupPolicy InOrder) is
// admitted with a Warning naming the annotation and the stages; on a JobSet of one stage, or of
// mode Stage, there is none.
func TestStagedJobSetBarrierWarning(t *testing.T) {
	barrier := func(mode contract.StartBarrier) *addontest.JobSetWrapper {
		return addontest.JobSet("ns", "a").Annotation(contract.StartBarrierAnnotationKey, string(mode))
	}
	dependsOn := barrier(contract.StartBarrierJobSet).ReplicatedJobs(addontest.ReplicatedJob("init"), addontest.ReplicatedJob("node").Replicas(2)).Obj()
	dependsOn.Spec.ReplicatedJobs[1].DependsOn = []jobsetv1alpha2.DependsOn{{Name: "init", Status: jobsetv1alpha2.DependencyComplete}}
	for name, tc := range map[string]struct {
		js   *jobsetv1alpha2.JobSet
		want []string
	}{
		"upstream dependsOn": {js: dependsOn, want: []string{"metadata.annotations[" + contract.StartBarrierAnnotationKey + "]",
			"JobSet on a JobSet that runs in 2 stages ([init] then [node])", "a barrier per stage", "could never open"}},
		"startupPolicy InOrder": {js: barrier(contract.StartBarrierJobSet).StartupPolicy(jobsetv1alpha2.InOrder).
			ReplicatedJobs(addontest.ReplicatedJob("a"), addontest.ReplicatedJob("b"), addontest.ReplicatedJob("c")).Obj(),
			want: []string{"3 stages ([a] then [b] then [c])"}},
		"execution-policy InOrder": {js: barrier(contract.StartBarrierJobSet).InOrder().
			ReplicatedJobs(addontest.ReplicatedJob("a"), addontest.ReplicatedJob("b")).Obj(), want: []string{"2 stages"}},
		"one stage":  {js: barrier(contract.StartBarrierJobSet).ReplicatedJobs(addontest.ReplicatedJob("a"), addontest.ReplicatedJob("b")).Obj()},
		"mode Stage": {js: barrier(contract.StartBarrierStage).InOrder().ReplicatedJobs(addontest.ReplicatedJob("a"), addontest.ReplicatedJob("b")).Obj()},
	} {
		w := &JobSetWebhook{Barrier: testBarrier}
		if err := w.Default(context.Background(), tc.js); err != nil {
			t.Fatal(err)
		}
		warnings, err := w.ValidateCreate(context.Background(), tc.js)
		if err != nil {
			t.Errorf("%s: refused: %v", name, err)
			continue
		}
		if len(tc.want) == 0 {
			if len(warnings) != 0 {
				t.Errorf("%s: warnings %q, want none", name, warnings)
			}
			continue
		}
		if len(warnings) != 1 {
			t.Errorf("%s: warnings %q, want one", name, warnings)
			continue
		}
		for _, s := range tc.want {
			if !strings.Contains(warnings[0], s) {
				t.Errorf("%s: warning %q does not say %q", name, warnings[0], s)
			}
		}
	}
}
