package sequencer_test

import (
	"context"
	"slices"
	"testing"

	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/e2e/framework"
	"github.com/jobset-addons/jobset-addons/pkg/addon/addontest"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

const (
	policyPath   = "metadata.annotations[sequencer.jobset-addons.io/execution-policy]"
	waitForPath  = "metadata.annotations[sequencer.jobset-addons.io/wait-for]"
	releasedPath = "metadata.annotations[sequencer.jobset-addons.io/released]"
)

// dependsOnPath is the path of the depends-on annotation of spec.replicatedJobs[i], written out.
func dependsOnPath(i string) string {
	return "spec.replicatedJobs[" + i + "].template.metadata.annotations[sequencer.jobset-addons.io/depends-on]"
}

// jobSet is addontest's JobSet wrapper, by a short name for the table of cases.
type jobSet = addontest.JobSetWrapper

// TestBadInputRefused: every bad sequencing is refused at admission, all its mistakes at once,
// each with its exact field path.
func TestBadInputRefused(t *testing.T) {
	three := func(ns string) *jobSet {
		return addontest.JobSet(ns, "bad").ReplicatedJobs(replicated("a", 1, 1, "1s"), replicated("b", 1, 1, "1s"), replicated("c", 1, 1, "1s"))
	}
	// dependsOn sets the depends-on annotation of c, the last of three's ReplicatedJobs.
	dependsOn := func(j *jobSet, value string) {
		c := &j.Spec.ReplicatedJobs[2]
		if c.Template.Annotations == nil {
			c.Template.Annotations = map[string]string{}
		}
		c.Template.Annotations[contract.DependsOnAnnotationKey] = value
	}
	cases := []struct {
		name      string
		build     func(j *jobSet)
		wantPaths []string
	}{
		{"cycle", func(j *jobSet) {
			j.Spec.ReplicatedJobs[0].Template.Annotations = map[string]string{contract.DependsOnAnnotationKey: "- name: c\n"}
			dependsOn(j, "- name: a\n")
		}, []string{dependsOnPath("0") + "[0].name"}},
		{"unknown name", func(j *jobSet) { dependsOn(j, "- name: initialiser\n") }, []string{dependsOnPath("2") + "[0].name"}},
		{"self-dependency", func(j *jobSet) { dependsOn(j, "- name: c\n") }, []string{dependsOnPath("2") + "[0].name"}},
		{"execution-policy and depends-on together", func(j *jobSet) { dependsOn(j.InOrder(), "- name: a\n") }, []string{dependsOnPath("2")}},
		{"depends-on beside upstream dependsOn", func(j *jobSet) {
			j.Spec.ReplicatedJobs[2].DependsOn = []jobsetv1alpha2.DependsOn{{Name: "b", Status: jobsetv1alpha2.DependencyComplete}}
			dependsOn(j, "- name: a\n")
		}, []string{dependsOnPath("2")}},
		{"execution-policy with startupPolicy InOrder", func(j *jobSet) {
			j.Spec.StartupPolicy = &jobsetv1alpha2.StartupPolicy{StartupPolicyOrder: jobsetv1alpha2.InOrder}
			j.InOrder()
		}, []string{"spec.startupPolicy"}},
		{"bad execution-policy", func(j *jobSet) { j.Annotation(contract.ExecutionPolicyAnnotationKey, "Sequential") }, []string{policyPath}},
		{"bad wait-for", func(j *jobSet) { j.InOrder().Annotation(contract.WaitForAnnotationKey, "Running") }, []string{waitForPath}},
		{"bad status", func(j *jobSet) { dependsOn(j, "- name: a\n  status: Started\n") }, []string{dependsOnPath("2") + "[0].status"}},
		{"unknown field", func(j *jobSet) { dependsOn(j, "- name: a\n  after: 5s\n") }, []string{dependsOnPath("2") + "[0].after"}},
		{"not YAML", func(j *jobSet) { dependsOn(j, "[{") }, []string{dependsOnPath("2")}},
		{"empty list", func(j *jobSet) { dependsOn(j, "[]") }, []string{dependsOnPath("2")}},
		{"name repeated", func(j *jobSet) { dependsOn(j, "- name: a\n- name: a\n") }, []string{dependsOnPath("2") + "[1].name"}},
		{"released written by the user", func(j *jobSet) {
			j.InOrder().Annotation(contract.ReleasedAnnotationKey, `{"restartAttempt":0,"replicatedJobs":["c"]}`)
		}, []string{releasedPath}},
		{"several mistakes at once", func(j *jobSet) {
			j.Annotation(contract.WaitForAnnotationKey, "Done")
			j.Spec.ReplicatedJobs[1].Template.Annotations = map[string]string{contract.DependsOnAnnotationKey: "- name: b\n"}
			dependsOn(j, "- name: nope\n  status: Later\n")
		}, []string{waitForPath, dependsOnPath("1") + "[0].name", dependsOnPath("2") + "[0].status", dependsOnPath("2") + "[0].name"}},
	}
	f := features.New("bad sequencing is refused with its field paths").WithSetup("namespace", framework.Namespace)
	for _, tc := range cases {
		f = f.Assess(tc.name, func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			c := framework.Client(t, cfg)
			j := three(framework.NamespaceFrom(ctx))
			tc.build(j)
			js := j.Obj()
			framework.ExpectRefusedAt(ctx, t, c, js, "vjobset.sequencer.jobset-addons.io", tc.wantPaths)
			return ctx
		})
	}
	testenv.Test(t, f.Teardown(framework.DeleteNamespace).Feature())
}

// TestAnnotationsImmutable: the sequencer annotations can be neither changed, added nor
// removed by an update; a JobSet without them gets no gate.
func TestAnnotationsImmutable(t *testing.T) {
	f := framework.NamespacedFeature("the sequencer annotations are immutable", "changes refused", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		c := framework.Client(t, cfg)
		ns := framework.NamespaceFrom(ctx)
		js := addontest.JobSet(ns, "fixed").InOrder().ReplicatedJobs(replicated("a", 1, 1, "1h"), replicated("b", 1, 1, "1h")).Obj()
		plain := addontest.JobSet(ns, "plain").ReplicatedJobs(replicated("a", 1, 1, "1h"), replicated("b", 1, 1, "1h")).Obj()
		framework.CreateAll(ctx, t, c, js, plain)
		for _, rj := range plain.Spec.ReplicatedJobs {
			if pt := rj.Template.Spec.Template; hasGate(pt.Spec.SchedulingGates) || pt.Labels[contract.SequencerGatedLabelKey] != "" {
				t.Errorf("a JobSet without sequencer annotations was gated: %s %+v", rj.Name, pt)
			}
		}
		for _, tc := range []struct {
			name     string
			edit     func() client.Object
			wantPath string
		}{
			{"execution-policy removed", func() client.Object { delete(js.Annotations, contract.ExecutionPolicyAnnotationKey); return js }, policyPath},
			{"wait-for added", func() client.Object { js.Annotations[contract.WaitForAnnotationKey] = "Ready"; return js }, waitForPath},
			{"execution-policy added", func() client.Object {
				plain.Annotations = map[string]string{contract.ExecutionPolicyAnnotationKey: "InOrder"}
				return plain
			}, policyPath},
		} {
			// JobSet writes its status meanwhile: retry conflicts, which come before admission.
			err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
				if err := c.Get(ctx, client.ObjectKeyFromObject(js), js); err != nil {
					return err
				}
				if err := c.Get(ctx, client.ObjectKeyFromObject(plain), plain); err != nil {
					return err
				}
				return c.Update(ctx, tc.edit())
			})
			paths, _ := framework.CausePaths(err)
			if err == nil || !slices.Equal(paths, []string{tc.wantPath}) {
				t.Errorf("%s: update = %v, want refused at %s", tc.name, err, tc.wantPath)
			}
		}
		return ctx
	})
	testenv.Test(t, f)
}
