package sequencer

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/pkg/addon/addontest"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

func TestUsesAndGatedStages(t *testing.T) {
	cases := map[string]struct {
		js         *jobsetv1alpha2.JobSet
		wantUses   bool
		wantGated  [][]string // ReplicatedJobs of each gated stage
		wantInject []string
	}{
		"plain": {
			js: addontest.JobSet("ns", "a").ReplicatedJobs(addontest.ReplicatedJob("x"), addontest.ReplicatedJob("y")).Obj(),
		},
		"upstream dependsOn only: upstream holds it, no gate": {
			js: addontest.JobSet("ns", "a").ReplicatedJobs(
				addontest.ReplicatedJob("x"),
				addontest.ReplicatedJob("v").DependsOnStatus("x", jobsetv1alpha2.DependencyComplete),
			).Obj(),
		},
		"wait-for alone: used, nothing to gate": {
			js:       addontest.JobSet("ns", "a").Annotation(contract.WaitForAnnotationKey, "Ready").ReplicatedJobs(addontest.ReplicatedJob("x")).Obj(),
			wantUses: true,
		},
		"InOrder": {
			js: addontest.JobSet("ns", "a").InOrder().ReplicatedJobs(
				addontest.ReplicatedJob("x"),
				addontest.ReplicatedJob("v"),
				addontest.ReplicatedJob("w"),
			).Obj(),
			wantUses:   true,
			wantGated:  [][]string{{"v"}, {"w"}},
			wantInject: []string{"v", "w"},
		},
		"fan-in beside an upstream stage: only ours is gated": {
			js: addontest.JobSet("ns", "a").ReplicatedJobs(
				addontest.ReplicatedJob("d"),
				addontest.ReplicatedJob("m").DependsOnStatus("d", jobsetv1alpha2.DependencyReady),
				addontest.ReplicatedJob("n").Replicas(2).DependsOnAnnotation("- name: d\n- name: m\n"),
			).Obj(),
			wantUses:   true,
			wantGated:  [][]string{{"n"}},
			wantInject: []string{"n"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := Uses(tc.js); got != tc.wantUses {
				t.Errorf("Uses = %v, want %v", got, tc.wantUses)
			}
			stages, errs := Stages(tc.js)
			if len(errs) > 0 {
				t.Fatal(errs.ToAggregate())
			}
			var gated [][]string
			for _, s := range GatedStages(stages) {
				gated = append(gated, s.ReplicatedJobs)
			}
			if diff := cmp.Diff(tc.wantGated, gated); diff != "" {
				t.Errorf("gated stages (-want +got):\n%s", diff)
			}
			if Admitted(tc.js, stages) != (len(tc.wantGated) == 0) {
				t.Errorf("Admitted before Inject = %v", Admitted(tc.js, stages))
			}
			if diff := cmp.Diff(tc.wantInject, Inject(tc.js, stages)); diff != "" {
				t.Errorf("Inject (-want +got):\n%s", diff)
			}
			if !Admitted(tc.js, stages) {
				t.Errorf("Admitted after Inject = false")
			}
		})
	}
}
