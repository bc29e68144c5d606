package contract

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseDependsOn(t *testing.T) {
	cases := map[string]struct {
		value string
		want  []Dependency
	}{
		"fan-in, YAML, status defaulted to Complete": {
			value: "- name: dataset-initializer\n- name: model-initializer\n  status: Ready\n",
			want:  []Dependency{{"dataset-initializer", DependencyComplete}, {"model-initializer", DependencyReady}},
		},
		"Succeeded is read as Complete": {
			value: `[{"name":"initializer","status":"Succeeded"}]`,
			want:  []Dependency{{"initializer", DependencyComplete}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, errs := ParseDependsOn(tc.value, ReplicatedJobAnnotationPath(1, DependsOnAnnotationKey))
			if len(errs) > 0 {
				t.Fatalf("unexpected errors: %v", errs.ToAggregate())
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("dependencies (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseEnums(t *testing.T) {
	cases := map[string]struct {
		parse func() (string, int)
		want  string
	}{
		"execution-policy InOrder": {
			parse: func() (string, int) {
				v, errs := ParseExecutionPolicy("InOrder", JobSetAnnotationPath(ExecutionPolicyAnnotationKey))
				return string(v), len(errs)
			},
			want: "InOrder",
		},
		"wait-for Ready": {
			parse: func() (string, int) {
				v, errs := ParseWaitFor("Ready", JobSetAnnotationPath(WaitForAnnotationKey))
				return string(v), len(errs)
			},
			want: "Ready",
		},
		"wait-for Succeeded is Complete": {
			parse: func() (string, int) {
				v, errs := ParseWaitFor("Succeeded", JobSetAnnotationPath(WaitForAnnotationKey))
				return string(v), len(errs)
			},
			want: "Complete",
		},
		"scheduler coscheduling": {
			parse: func() (string, int) {
				v, errs := ParseScheduler("coscheduling", JobSetAnnotationPath(SchedulerAnnotationKey))
				return string(v), len(errs)
			},
			want: "coscheduling",
		},
		"scheduler kubernetes": {
			parse: func() (string, int) {
				v, errs := ParseScheduler("kubernetes", JobSetAnnotationPath(SchedulerAnnotationKey))
				return string(v), len(errs)
			},
			want: "kubernetes",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, nerrs := tc.parse()
			if nerrs > 0 || got != tc.want {
				t.Errorf("got %q with %d errors, want %q", got, nerrs, tc.want)
			}
		})
	}
}

func TestReleased(t *testing.T) {
	cases := map[string]struct {
		value      string
		want       Released
		wantString string
		wantHas    map[string]bool
	}{
		"nothing released yet": {
			value:      `{"restartAttempt":0,"replicatedJobs":[]}`,
			want:       Released{ReplicatedJobs: []string{}},
			wantString: `{"restartAttempt":0,"replicatedJobs":[]}`,
			wantHas:    map[string]bool{"node": false},
		},
		"order kept": {
			value:      `{"restartAttempt":2,"replicatedJobs":["node","eval"]}`,
			want:       Released{RestartAttempt: 2, ReplicatedJobs: []string{"node", "eval"}},
			wantString: `{"restartAttempt":2,"replicatedJobs":["node","eval"]}`,
			wantHas:    map[string]bool{"node": true, "eval": true, "initializer": false},
		},
		"YAML, attempt left out": {
			value:      "replicatedJobs: [node]\n",
			want:       Released{ReplicatedJobs: []string{"node"}},
			wantString: `{"restartAttempt":0,"replicatedJobs":["node"]}`,
			wantHas:    map[string]bool{"node": true},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, errs := ParseReleased(tc.value, JobSetAnnotationPath(ReleasedAnnotationKey))
			if len(errs) > 0 {
				t.Fatalf("unexpected errors: %v", errs.ToAggregate())
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("released (-want +got):\n%s", diff)
			}
			if got.String() != tc.wantString {
				t.Errorf("String() = %q, want %q", got.String(), tc.wantString)
			}
			for name, want := range tc.wantHas {
				if got.Has(name) != want {
					t.Errorf("Has(%q) = %v, want %v", name, got.Has(name), want)
				}
			}
		})
	}

	var r Released
	if r.String() != `{"restartAttempt":0,"replicatedJobs":[]}` {
		t.Errorf("zero String() = %q", r.String())
	}
	r2 := r.With("b").With("a", "b")
	if diff := cmp.Diff(Released{ReplicatedJobs: []string{"b", "a"}}, r2); diff != "" {
		t.Errorf("With (-want +got):\n%s", diff)
	}
	if r.ReplicatedJobs != nil {
		t.Errorf("With modified its receiver: %v", r)
	}
}

func TestStageReleased(t *testing.T) {
	r := Released{ReplicatedJobs: []string{"a"}}
	cases := map[string]struct {
		stage Stage
		want  bool
	}{
		"stage 0":                        {Stage{Index: 0, ReplicatedJobs: []string{"x"}, Gated: true}, true},
		"not gated (upstream dependsOn)": {Stage{Index: 1, ReplicatedJobs: []string{"x"}}, true},
		"gated, all listed":              {Stage{Index: 1, ReplicatedJobs: []string{"a"}, Gated: true}, true},
		"gated, one missing":             {Stage{Index: 2, ReplicatedJobs: []string{"a", "b"}, Gated: true}, false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := r.StageReleased(tc.stage); got != tc.want {
				t.Errorf("StageReleased = %v, want %v", got, tc.want)
			}
		})
	}
}
