package webhook

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	tu "github.com/jobset-addons/jobset-addons/controllers/sequencer/internal/testutil"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

const (
	policy   = "metadata.annotations[sequencer.jobset-addons.io/execution-policy]"
	waitFor  = "metadata.annotations[sequencer.jobset-addons.io/wait-for]"
	released = "metadata.annotations[sequencer.jobset-addons.io/released]"
)

func dependsOn(i int) string {
	return contract.ReplicatedJobAnnotationPath(i, contract.DependsOnAnnotationKey).String()
}

// fieldErr is "Type Field" of a field error.
type fieldErr string

func errsOf(list field.ErrorList) []fieldErr {
	var out []fieldErr
	for _, e := range list {
		out = append(out, fieldErr(string(e.Type)+" "+e.Field))
	}
	return out
}

func fe(t field.ErrorType, path string) fieldErr { return fieldErr(string(t) + " " + path) }

func TestValidateCreate(t *testing.T) {
	cases := map[string]struct {
		js       *jobsetv1alpha2.JobSet
		wantErrs []fieldErr
	}{
		"KEP-672 InOrder is valid": {
			js: tu.JobSet("a").InOrder().ReplicatedJob("initializer", 1).ReplicatedJob("node", 2).Obj(),
		},
		"fan-in is valid": {
			js: tu.JobSet("a").ReplicatedJob("data", 1).ReplicatedJob("model", 1).ReplicatedJob("node", 2).
				DependsOn("- name: data\n- name: model\n").Obj(),
		},
		"no sequencer annotation: not looked at": {
			js: tu.JobSet("a").ReplicatedJob("x", 1).UpstreamDependsOn("nope", jobsetv1alpha2.DependencyReady).Obj(),
		},
		"cycle": {
			js:       tu.JobSet("a").ReplicatedJob("x", 1).DependsOn("- name: v\n").ReplicatedJob("v", 1).DependsOn("- name: x\n").Obj(),
			wantErrs: []fieldErr{fe(field.ErrorTypeInvalid, dependsOn(0)+"[0].name")},
		},
		"unknown name": {
			js:       tu.JobSet("a").ReplicatedJob("x", 1).ReplicatedJob("y", 1).DependsOn("- name: initialiser\n").Obj(),
			wantErrs: []fieldErr{fe(field.ErrorTypeNotFound, dependsOn(1)+"[0].name")},
		},
		"self-dependency": {
			js:       tu.JobSet("a").ReplicatedJob("x", 1).DependsOn("- name: x\n").Obj(),
			wantErrs: []fieldErr{fe(field.ErrorTypeInvalid, dependsOn(0)+"[0].name")},
		},
		"both annotations": {
			js:       tu.JobSet("a").InOrder().ReplicatedJob("x", 1).ReplicatedJob("y", 1).DependsOn("- name: x\n").Obj(),
			wantErrs: []fieldErr{fe(field.ErrorTypeForbidden, dependsOn(1))},
		},
		"depends-on beside upstream dependsOn": {
			js: tu.JobSet("a").ReplicatedJob("x", 1).ReplicatedJob("y", 1).ReplicatedJob("z", 1).
				DependsOn("- name: x\n").UpstreamDependsOn("y", jobsetv1alpha2.DependencyComplete).Obj(),
			wantErrs: []fieldErr{fe(field.ErrorTypeForbidden, dependsOn(2))},
		},
		"execution-policy with startupPolicy InOrder": {
			js:       tu.JobSet("a").InOrder().StartupInOrder().ReplicatedJob("x", 1).ReplicatedJob("y", 1).Obj(),
			wantErrs: []fieldErr{fe(field.ErrorTypeForbidden, "spec.startupPolicy")},
		},
		"bad execution-policy": {
			js:       tu.JobSet("a").Annotation(contract.ExecutionPolicyAnnotationKey, "Sequential").ReplicatedJob("x", 1).Obj(),
			wantErrs: []fieldErr{fe(field.ErrorTypeNotSupported, policy)},
		},
		"bad wait-for": {
			js:       tu.JobSet("a").InOrder().Annotation(contract.WaitForAnnotationKey, "Running").ReplicatedJob("x", 1).Obj(),
			wantErrs: []fieldErr{fe(field.ErrorTypeNotSupported, waitFor)},
		},
		"bad status and unknown field in depends-on": {
			js: tu.JobSet("a").ReplicatedJob("x", 1).ReplicatedJob("y", 1).DependsOn("- name: x\n  status: Started\n  after: 5s\n").Obj(),
			wantErrs: []fieldErr{
				fe(field.ErrorTypeNotSupported, dependsOn(1)+"[0].after"),
				fe(field.ErrorTypeNotSupported, dependsOn(1)+"[0].status"),
			},
		},
		"empty depends-on": {
			js:       tu.JobSet("a").ReplicatedJob("x", 1).ReplicatedJob("y", 1).DependsOn("[]").Obj(),
			wantErrs: []fieldErr{fe(field.ErrorTypeRequired, dependsOn(1))},
		},
		"released set by the user": {
			js: tu.JobSet("a").InOrder().Annotation(contract.ReleasedAnnotationKey, `{"replicatedJobs":["y"]}`).
				ReplicatedJob("x", 1).ReplicatedJob("y", 1).Obj(),
			wantErrs: []fieldErr{fe(field.ErrorTypeForbidden, released)},
		},
		"every problem at once": {
			js: tu.JobSet("a").Annotation(contract.WaitForAnnotationKey, "Done").
				ReplicatedJob("x", 1).DependsOn("- name: x\n").ReplicatedJob("y", 1).DependsOn("- name: nope\n").Obj(),
			wantErrs: []fieldErr{
				fe(field.ErrorTypeNotSupported, waitFor),
				fe(field.ErrorTypeInvalid, dependsOn(0)+"[0].name"),
				fe(field.ErrorTypeNotFound, dependsOn(1)+"[0].name"),
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.wantErrs, errsOf(ValidateCreate(tc.js))); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
			_, err := (&JobSetWebhook{}).ValidateCreate(context.Background(), tc.js)
			if (err != nil) != (len(tc.wantErrs) > 0) {
				t.Errorf("ValidateCreate error %v, want one: %v", err, len(tc.wantErrs) > 0)
			}
		})
	}
}

func TestValidateUpdate(t *testing.T) {
	base := func() *tu.JobSetWrapper {
		return tu.JobSet("a").InOrder().ReplicatedJob("x", 1).ReplicatedJob("y", 1)
	}
	fanIn := func() *tu.JobSetWrapper {
		return tu.JobSet("a").ReplicatedJob("x", 1).ReplicatedJob("y", 1).DependsOn("- name: x\n")
	}
	cases := map[string]struct {
		old, new *jobsetv1alpha2.JobSet
		wantErrs []fieldErr
	}{
		"released written by the controller": {
			old: base().Obj(),
			new: base().Annotation(contract.ReleasedAnnotationKey, `{"restartAttempt":0,"replicatedJobs":["y"]}`).Obj(),
		},
		"execution-policy removed, wait-for added": {
			old:      base().Obj(),
			new:      tu.JobSet("a").Annotation(contract.WaitForAnnotationKey, "Ready").ReplicatedJob("x", 1).ReplicatedJob("y", 1).Obj(),
			wantErrs: []fieldErr{fe(field.ErrorTypeForbidden, policy), fe(field.ErrorTypeForbidden, waitFor)},
		},
		"depends-on changed": {
			old:      fanIn().Obj(),
			new:      tu.JobSet("a").ReplicatedJob("x", 1).ReplicatedJob("y", 1).DependsOn("- name: x\n  status: Ready\n").Obj(),
			wantErrs: []fieldErr{fe(field.ErrorTypeForbidden, dependsOn(1))},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.wantErrs, errsOf(ValidateUpdate(tc.old, tc.new))); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDefault(t *testing.T) {
	cases := map[string]struct {
		js        *jobsetv1alpha2.JobSet
		wantGated []string
	}{
		"InOrder: every ReplicatedJob but the first": {
			js:        tu.JobSet("a").InOrder().ReplicatedJob("init", 1).ReplicatedJob("node", 2).ReplicatedJob("eval", 1).Obj(),
			wantGated: []string{"node", "eval"},
		},
		"fan-in: the one that waits": {
			js: tu.JobSet("a").ReplicatedJob("data", 1).ReplicatedJob("node", 2).DependsOn("- name: data\n- name: model\n").
				ReplicatedJob("model", 1).Obj(),
			wantGated: []string{"node"},
		},
		"upstream dependsOn only: left to upstream": {
			js: tu.JobSet("a").Annotation(contract.WaitForAnnotationKey, "Ready").ReplicatedJob("x", 1).ReplicatedJob("y", 1).
				UpstreamDependsOn("x", jobsetv1alpha2.DependencyReady).Obj(),
		},
		"invalid: left for validation to refuse": {
			js: tu.JobSet("a").ReplicatedJob("x", 1).DependsOn("- name: v\n").ReplicatedJob("v", 1).DependsOn("- name: x\n").Obj(),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if err := (&JobSetWebhook{}).Default(context.Background(), tc.js); err != nil {
				t.Fatal(err)
			}
			// Twice: idempotent.
			if err := (&JobSetWebhook{}).Default(context.Background(), tc.js); err != nil {
				t.Fatal(err)
			}
			var gated []string
			for _, rj := range tc.js.Spec.ReplicatedJobs {
				pt := rj.Template.Spec.Template
				gates := 0
				for _, g := range pt.Spec.SchedulingGates {
					if g.Name == contract.SequencerSchedulingGateValue {
						gates++
					}
				}
				labelled := pt.Labels[contract.SequencerGatedLabelKey] == contract.EnabledValue
				if (gates > 0) != labelled || gates > 1 {
					t.Errorf("%s: %d gates, labelled %v", rj.Name, gates, labelled)
				}
				if gates > 0 {
					gated = append(gated, rj.Name)
				}
			}
			if diff := cmp.Diff(tc.wantGated, gated); diff != "" {
				t.Errorf("gated ReplicatedJobs (-want +got):\n%s", diff)
			}
		})
	}
	_ = corev1.PodSchedulingGate{}
}
