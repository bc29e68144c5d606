package contract

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// rjs builds ReplicatedJob views with no annotations from names.
func rjs(names ...string) []ReplicatedJobView {
	out := make([]ReplicatedJobView, len(names))
	for i, n := range names {
		out[i] = ReplicatedJobView{Name: n}
	}
	return out
}

// dependsOn gives the i-th ReplicatedJob a depends-on annotation.
func dependsOn(views []ReplicatedJobView, i int, value string) []ReplicatedJobView {
	views[i].TemplateAnnotations = map[string]string{DependsOnAnnotationKey: value}
	return views
}

func TestStages(t *testing.T) {
	inOrder := map[string]string{ExecutionPolicyAnnotationKey: "InOrder"}
	cases := map[string]struct {
		view          JobSetView
		want          []Stage
		wantSequenced bool
	}{
		"no sequencing: one stage holding every ReplicatedJob": {
			view: JobSetView{ReplicatedJobs: rjs("driver", "workers")},
			want: []Stage{{Index: 0, ReplicatedJobs: []string{"driver", "workers"}}},
		},
		"no ReplicatedJobs: no stages": {
			view: JobSetView{Annotations: inOrder},
		},
		"InOrder waits for Complete by default": {
			view: JobSetView{Annotations: inOrder, ReplicatedJobs: rjs("initializer", "node", "post")},
			want: []Stage{
				{Index: 0, ReplicatedJobs: []string{"initializer"}},
				{Index: 1, ReplicatedJobs: []string{"node"}, DependsOn: []Dependency{{"initializer", DependencyComplete}}, Gated: true},
				{Index: 2, ReplicatedJobs: []string{"post"}, DependsOn: []Dependency{{"node", DependencyComplete}}, Gated: true},
			},
			wantSequenced: true,
		},
		"InOrder with wait-for Ready": {
			view: JobSetView{
				Annotations:    map[string]string{ExecutionPolicyAnnotationKey: "InOrder", WaitForAnnotationKey: "Ready"},
				ReplicatedJobs: rjs("driver", "workers"),
			},
			want: []Stage{
				{Index: 0, ReplicatedJobs: []string{"driver"}},
				{Index: 1, ReplicatedJobs: []string{"workers"}, DependsOn: []Dependency{{"driver", DependencyReady}}, Gated: true},
			},
			wantSequenced: true,
		},
		"InOrder with one ReplicatedJob is not sequenced": {
			view: JobSetView{Annotations: inOrder, ReplicatedJobs: rjs("only")},
			want: []Stage{{Index: 0, ReplicatedJobs: []string{"only"}}},
		},
		"fan-in (KEP-572 story 2)": {
			view: JobSetView{ReplicatedJobs: dependsOn(rjs("dataset-initializer", "model-initializer", "node"), 2,
				"- name: dataset-initializer\n- name: model-initializer\n")},
			want: []Stage{
				{Index: 0, ReplicatedJobs: []string{"dataset-initializer", "model-initializer"}},
				{Index: 1, ReplicatedJobs: []string{"node"}, Gated: true, DependsOn: []Dependency{
					{"dataset-initializer", DependencyComplete}, {"model-initializer", DependencyComplete},
				}},
			},
			wantSequenced: true,
		},
		"diamond: earliest stage, spec order inside it, Complete wins over Ready": {
			view: func() JobSetView {
				v := rjs("merge", "left", "right", "source")
				dependsOn(v, 0, "[{name: right}, {name: left}]")
				dependsOn(v, 1, "[{name: source, status: Ready}]")
				dependsOn(v, 2, "[{name: source}]")
				return JobSetView{ReplicatedJobs: v}
			}(),
			want: []Stage{
				{Index: 0, ReplicatedJobs: []string{"source"}},
				{Index: 1, ReplicatedJobs: []string{"left", "right"}, DependsOn: []Dependency{{"source", DependencyComplete}}, Gated: true},
				{Index: 2, ReplicatedJobs: []string{"merge"}, DependsOn: []Dependency{{"left", DependencyComplete}, {"right", DependencyComplete}}, Gated: true},
			},
			wantSequenced: true,
		},
		"depends-on without status uses wait-for": {
			view: JobSetView{
				Annotations:    map[string]string{WaitForAnnotationKey: "Ready"},
				ReplicatedJobs: dependsOn(rjs("a", "b"), 1, "- name: a\n"),
			},
			want: []Stage{
				{Index: 0, ReplicatedJobs: []string{"a"}},
				{Index: 1, ReplicatedJobs: []string{"b"}, DependsOn: []Dependency{{"a", DependencyReady}}, Gated: true},
			},
			wantSequenced: true,
		},
		"upstream dependsOn only: stages upstream holds back": {
			view: JobSetView{ReplicatedJobs: []ReplicatedJobView{
				{Name: "initializer"},
				{Name: "node", DependsOn: []Dependency{{"initializer", DependencyComplete}}},
			}},
			want: []Stage{
				{Index: 0, ReplicatedJobs: []string{"initializer"}},
				{Index: 1, ReplicatedJobs: []string{"node"}, DependsOn: []Dependency{{"initializer", DependencyComplete}}},
			},
			wantSequenced: true,
		},
		"upstream dependsOn and depends-on together": {
			view: JobSetView{ReplicatedJobs: []ReplicatedJobView{
				{Name: "a"},
				{Name: "b", DependsOn: []Dependency{{"a", DependencyReady}}},
				{Name: "c", TemplateAnnotations: map[string]string{DependsOnAnnotationKey: `[{"name":"b","status":"Ready"}]`}},
			}},
			want: []Stage{
				{Index: 0, ReplicatedJobs: []string{"a"}},
				{Index: 1, ReplicatedJobs: []string{"b"}, DependsOn: []Dependency{{"a", DependencyReady}}},
				{Index: 2, ReplicatedJobs: []string{"c"}, DependsOn: []Dependency{{"b", DependencyReady}}, Gated: true},
			},
			wantSequenced: true,
		},
		"upstream startupPolicy InOrder: each waits for the previous Ready": {
			view: JobSetView{StartupPolicyInOrder: true, ReplicatedJobs: rjs("driver", "workers")},
			want: []Stage{
				{Index: 0, ReplicatedJobs: []string{"driver"}},
				{Index: 1, ReplicatedJobs: []string{"workers"}, DependsOn: []Dependency{{"driver", DependencyReady}}},
			},
			wantSequenced: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, errs := Stages(tc.view)
			if len(errs) > 0 {
				t.Fatalf("unexpected errors: %v", errs.ToAggregate())
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("stages (-want +got):\n%s", diff)
			}
			if got := Sequenced(tc.view); got != tc.wantSequenced {
				t.Errorf("Sequenced() = %v, want %v", got, tc.wantSequenced)
			}
		})
	}
}

func TestStagesErrors(t *testing.T) {
	const (
		rj0DependsOn = "spec.replicatedJobs[0].template.metadata.annotations[sequencer.jobset-addons.io/depends-on]"
		rj1DependsOn = "spec.replicatedJobs[1].template.metadata.annotations[sequencer.jobset-addons.io/depends-on]"
		rj2DependsOn = "spec.replicatedJobs[2].template.metadata.annotations[sequencer.jobset-addons.io/depends-on]"
	)
	inOrder := map[string]string{ExecutionPolicyAnnotationKey: "InOrder"}
	cases := map[string]struct {
		view        JobSetView
		wantErrs    []fieldErr
		wantMessage string // in the first error, when set
	}{
		"two-way cycle": {
			view: func() JobSetView {
				v := rjs("a", "b")
				dependsOn(v, 0, "- name: b\n")
				dependsOn(v, 1, "- name: a\n")
				return JobSetView{ReplicatedJobs: v}
			}(),
			wantErrs:    []fieldErr{{invalid, rj0DependsOn + "[0].name"}},
			wantMessage: "a -> b -> a",
		},
		"three-way cycle reported at its earliest ReplicatedJob": {
			view: func() JobSetView {
				v := rjs("free", "x", "y", "z")
				dependsOn(v, 1, "- name: free\n- name: z\n")
				dependsOn(v, 2, "- name: x\n")
				v[3].DependsOn = []Dependency{{"y", DependencyComplete}}
				return JobSetView{ReplicatedJobs: v}
			}(),
			wantErrs:    []fieldErr{{invalid, rj1DependsOn + "[1].name"}},
			wantMessage: "x -> z -> y -> x",
		},
		"unknown predecessor": {
			view:     JobSetView{ReplicatedJobs: dependsOn(rjs("a", "b"), 1, "- name: a\n- name: initialiser\n")},
			wantErrs: []fieldErr{{notFound, rj1DependsOn + "[1].name"}},
		},
		"unknown predecessor in upstream dependsOn": {
			view: JobSetView{ReplicatedJobs: []ReplicatedJobView{
				{Name: "a"}, {Name: "b", DependsOn: []Dependency{{"c", DependencyReady}}},
			}},
			wantErrs: []fieldErr{{notFound, "spec.replicatedJobs[1].dependsOn[0].name"}},
		},
		"depends on itself": {
			view:     JobSetView{ReplicatedJobs: dependsOn(rjs("a", "b", "c"), 2, "- name: c\n")},
			wantErrs: []fieldErr{{invalid, rj2DependsOn + "[0].name"}},
		},
		"InOrder with depends-on": {
			view:     JobSetView{Annotations: inOrder, ReplicatedJobs: dependsOn(rjs("a", "b"), 1, "- name: a\n")},
			wantErrs: []fieldErr{{forbidden, rj1DependsOn}},
		},
		"InOrder with upstream dependsOn": {
			view: JobSetView{Annotations: inOrder, ReplicatedJobs: []ReplicatedJobView{
				{Name: "a"}, {Name: "b", DependsOn: []Dependency{{"a", DependencyReady}}},
			}},
			wantErrs: []fieldErr{{forbidden, "spec.replicatedJobs[1].dependsOn"}},
		},
		"depends-on and upstream dependsOn on the same ReplicatedJob": {
			view: JobSetView{ReplicatedJobs: []ReplicatedJobView{
				{Name: "a"}, {Name: "b"},
				{Name: "c", DependsOn: []Dependency{{"a", DependencyReady}}, TemplateAnnotations: map[string]string{DependsOnAnnotationKey: "- name: b\n"}},
			}},
			wantErrs: []fieldErr{{forbidden, rj2DependsOn}},
		},
		"sequencer annotations with upstream startupPolicy InOrder": {
			view:     JobSetView{StartupPolicyInOrder: true, Annotations: inOrder, ReplicatedJobs: rjs("a", "b")},
			wantErrs: []fieldErr{{forbidden, "spec.startupPolicy"}},
		},
		"depends-on with upstream startupPolicy InOrder": {
			view:     JobSetView{StartupPolicyInOrder: true, ReplicatedJobs: dependsOn(rjs("a", "b"), 1, "- name: a\n")},
			wantErrs: []fieldErr{{forbidden, "spec.startupPolicy"}},
		},
		"bad annotation values": {
			view: JobSetView{
				Annotations:    map[string]string{ExecutionPolicyAnnotationKey: "AnyOrder", WaitForAnnotationKey: "Done"},
				ReplicatedJobs: rjs("a"),
			},
			wantErrs: []fieldErr{
				{notSupported, "metadata.annotations[sequencer.jobset-addons.io/execution-policy]"},
				{notSupported, "metadata.annotations[sequencer.jobset-addons.io/wait-for]"},
			},
		},
		"bad execution-policy is not read as InOrder": {
			view: JobSetView{
				Annotations:    map[string]string{ExecutionPolicyAnnotationKey: "Sequential"},
				ReplicatedJobs: dependsOn(rjs("a", "b"), 1, "- name: a\n"),
			},
			wantErrs: []fieldErr{{notSupported, "metadata.annotations[sequencer.jobset-addons.io/execution-policy]"}},
		},
		"bad depends-on value": {
			view:     JobSetView{ReplicatedJobs: dependsOn(rjs("a", "b"), 1, "- name: a\n  status: Started\n")},
			wantErrs: []fieldErr{{notSupported, rj1DependsOn + "[0].status"}},
		},
		"repeated ReplicatedJob name": {
			view:     JobSetView{ReplicatedJobs: rjs("a", "a")},
			wantErrs: []fieldErr{{duplicate, "spec.replicatedJobs[1].name"}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, errs := Stages(tc.view)
			if got != nil {
				t.Errorf("stages %v, want nil with errors", got)
			}
			if diff := cmp.Diff(tc.wantErrs, errsOf(errs)); diff != "" {
				t.Errorf("errors (-want +got):\n%s\ngot: %v", diff, errs.ToAggregate())
			}
			if tc.wantMessage != "" && (len(errs) == 0 || !strings.Contains(errs[0].Error(), tc.wantMessage)) {
				t.Errorf("error %v, want it to say %q", errs.ToAggregate(), tc.wantMessage)
			}
			if Sequenced(tc.view) {
				t.Errorf("Sequenced() = true for an invalid JobSet")
			}
		})
	}
}

func TestStageOf(t *testing.T) {
	stages := []Stage{{Index: 0, ReplicatedJobs: []string{"a", "b"}}, {Index: 1, ReplicatedJobs: []string{"c"}}}
	cases := map[string]struct {
		name      string
		wantIndex int
		wantFound bool
	}{
		"first stage":  {"b", 0, true},
		"second stage": {"c", 1, true},
		"absent":       {"d", 0, false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			i, found := StageOf(stages, tc.name)
			if i != tc.wantIndex || found != tc.wantFound {
				t.Errorf("StageOf(%q) = %d, %v, want %d, %v", tc.name, i, found, tc.wantIndex, tc.wantFound)
			}
		})
	}
}
