package webhook

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/pkg/addon/addontest"
	"github.com/jobset-addons/jobset-addons/pkg/addon/checks/sequencer"
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
			js: addontest.JobSet("ns", "a").InOrder().ReplicatedJobs(
				addontest.ReplicatedJob("initializer"),
				addontest.ReplicatedJob("node").Replicas(2),
			).Obj(),
		},
		"fan-in is valid": {
			js: addontest.JobSet("ns", "a").ReplicatedJobs(
				addontest.ReplicatedJob("data"),
				addontest.ReplicatedJob("model"),
				addontest.ReplicatedJob("node").Replicas(2).DependsOnAnnotation("- name: data\n- name: model\n"),
			).Obj(),
		},
		"no sequencer annotation: not looked at": {
			js: addontest.JobSet("ns", "a").ReplicatedJobs(addontest.ReplicatedJob("x").DependsOnStatus("nope", jobsetv1alpha2.DependencyReady)).Obj(),
		},
		"cycle": {
			js: addontest.JobSet("ns", "a").ReplicatedJobs(
				addontest.ReplicatedJob("x").DependsOnAnnotation("- name: v\n"),
				addontest.ReplicatedJob("v").DependsOnAnnotation("- name: x\n"),
			).Obj(),
			wantErrs: []fieldErr{fe(field.ErrorTypeInvalid, dependsOn(0)+"[0].name")},
		},
		"unknown name": {
			js: addontest.JobSet("ns", "a").ReplicatedJobs(
				addontest.ReplicatedJob("x"),
				addontest.ReplicatedJob("y").DependsOnAnnotation("- name: initialiser\n"),
			).Obj(),
			wantErrs: []fieldErr{fe(field.ErrorTypeNotFound, dependsOn(1)+"[0].name")},
		},
		"self-dependency": {
			js:       addontest.JobSet("ns", "a").ReplicatedJobs(addontest.ReplicatedJob("x").DependsOnAnnotation("- name: x\n")).Obj(),
			wantErrs: []fieldErr{fe(field.ErrorTypeInvalid, dependsOn(0)+"[0].name")},
		},
		"both annotations": {
			js: addontest.JobSet("ns", "a").InOrder().ReplicatedJobs(
				addontest.ReplicatedJob("x"),
				addontest.ReplicatedJob("y").DependsOnAnnotation("- name: x\n"),
			).Obj(),
			wantErrs: []fieldErr{fe(field.ErrorTypeForbidden, dependsOn(1))},
		},
		"depends-on beside upstream dependsOn": {
			js: addontest.JobSet("ns", "a").ReplicatedJobs(
				addontest.ReplicatedJob("x"),
				addontest.ReplicatedJob("y"),
				addontest.ReplicatedJob("z").DependsOnAnnotation("- name: x\n").DependsOnStatus("y", jobsetv1alpha2.DependencyComplete),
			).Obj(),
			wantErrs: []fieldErr{fe(field.ErrorTypeForbidden, dependsOn(2))},
		},
		"execution-policy with startupPolicy InOrder": {
			js: addontest.JobSet("ns", "a").InOrder().StartupPolicy(jobsetv1alpha2.InOrder).ReplicatedJobs(
				addontest.ReplicatedJob("x"),
				addontest.ReplicatedJob("y"),
			).Obj(),
			wantErrs: []fieldErr{fe(field.ErrorTypeForbidden, "spec.startupPolicy")},
		},
		"bad execution-policy": {
			js:       addontest.JobSet("ns", "a").Annotation(contract.ExecutionPolicyAnnotationKey, "Sequential").ReplicatedJobs(addontest.ReplicatedJob("x")).Obj(),
			wantErrs: []fieldErr{fe(field.ErrorTypeNotSupported, policy)},
		},
		"bad wait-for": {
			js:       addontest.JobSet("ns", "a").InOrder().Annotation(contract.WaitForAnnotationKey, "Running").ReplicatedJobs(addontest.ReplicatedJob("x")).Obj(),
			wantErrs: []fieldErr{fe(field.ErrorTypeNotSupported, waitFor)},
		},
		"bad status and unknown field in depends-on": {
			js: addontest.JobSet("ns", "a").ReplicatedJobs(
				addontest.ReplicatedJob("x"),
				addontest.ReplicatedJob("y").DependsOnAnnotation("- name: x\n  status: Started\n  after: 5s\n"),
			).Obj(),
			wantErrs: []fieldErr{
				fe(field.ErrorTypeNotSupported, dependsOn(1)+"[0].after"),
				fe(field.ErrorTypeNotSupported, dependsOn(1)+"[0].status"),
			},
		},
		"empty depends-on": {
			js: addontest.JobSet("ns", "a").ReplicatedJobs(
				addontest.ReplicatedJob("x"),
				addontest.ReplicatedJob("y").DependsOnAnnotation("[]"),
			).Obj(),
			wantErrs: []fieldErr{fe(field.ErrorTypeRequired, dependsOn(1))},
		},
		"released set by the user": {
			js: addontest.JobSet("ns", "a").InOrder().Annotation(contract.ReleasedAnnotationKey, `{"replicatedJobs":["y"]}`).
				ReplicatedJobs(addontest.ReplicatedJob("x"), addontest.ReplicatedJob("y")).Obj(),
			wantErrs: []fieldErr{fe(field.ErrorTypeForbidden, released)},
		},
		"every problem at once": {
			js: addontest.JobSet("ns", "a").Annotation(contract.WaitForAnnotationKey, "Done").
				ReplicatedJobs(
					addontest.ReplicatedJob("x").DependsOnAnnotation("- name: x\n"),
					addontest.ReplicatedJob("y").DependsOnAnnotation("- name: nope\n"),
				).Obj(),
			wantErrs: []fieldErr{
				fe(field.ErrorTypeNotSupported, waitFor),
				fe(field.ErrorTypeInvalid, dependsOn(0)+"[0].name"),
				fe(field.ErrorTypeNotFound, dependsOn(1)+"[0].name"),
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.wantErrs, errsOf(sequencer.ValidateCreate(tc.js))); diff != "" {
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
	base := func() *addontest.JobSetWrapper {
		return addontest.JobSet("ns", "a").InOrder().ReplicatedJobs(addontest.ReplicatedJob("x"), addontest.ReplicatedJob("y"))
	}
	fanIn := func() *addontest.JobSetWrapper {
		return addontest.JobSet("ns", "a").ReplicatedJobs(
			addontest.ReplicatedJob("x"),
			addontest.ReplicatedJob("y").DependsOnAnnotation("- name: x\n"),
		)
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
			old: base().Obj(),
			new: addontest.JobSet("ns", "a").Annotation(contract.WaitForAnnotationKey, "Ready").ReplicatedJobs(
				addontest.ReplicatedJob("x"),
				addontest.ReplicatedJob("y"),
			).Obj(),
			wantErrs: []fieldErr{fe(field.ErrorTypeForbidden, policy), fe(field.ErrorTypeForbidden, waitFor)},
		},
		"depends-on changed": {
			old: fanIn().Obj(),
			new: addontest.JobSet("ns", "a").ReplicatedJobs(
				addontest.ReplicatedJob("x"),
				addontest.ReplicatedJob("y").DependsOnAnnotation("- name: x\n  status: Ready\n"),
			).Obj(),
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
			js: addontest.JobSet("ns", "a").InOrder().ReplicatedJobs(
				addontest.ReplicatedJob("init"),
				addontest.ReplicatedJob("node").Replicas(2),
				addontest.ReplicatedJob("eval"),
			).Obj(),
			wantGated: []string{"node", "eval"},
		},
		"fan-in: the one that waits": {
			js: addontest.JobSet("ns", "a").ReplicatedJobs(
				addontest.ReplicatedJob("data"),
				addontest.ReplicatedJob("node").Replicas(2).DependsOnAnnotation("- name: data\n- name: model\n"),
				addontest.ReplicatedJob("model"),
			).Obj(),
			wantGated: []string{"node"},
		},
		"upstream dependsOn only: left to upstream": {
			js: addontest.JobSet("ns", "a").Annotation(contract.WaitForAnnotationKey, "Ready").ReplicatedJobs(
				addontest.ReplicatedJob("x"),
				addontest.ReplicatedJob("y").DependsOnStatus("x", jobsetv1alpha2.DependencyReady),
			).Obj(),
		},
		"invalid: left for validation to refuse": {
			js: addontest.JobSet("ns", "a").ReplicatedJobs(
				addontest.ReplicatedJob("x").DependsOnAnnotation("- name: v\n"),
				addontest.ReplicatedJob("v").DependsOnAnnotation("- name: x\n"),
			).Obj(),
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
