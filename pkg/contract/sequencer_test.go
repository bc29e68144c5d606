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

func TestReleasedStages(t *testing.T) {
	cases := map[string]struct {
		value      string
		want       ReleasedStages
		wantString string
		wantHas    map[int]bool
	}{
		"nothing released yet": {
			value:      "[]",
			want:       ReleasedStages{},
			wantString: "[]",
			wantHas:    map[int]bool{0: true, 1: false},
		},
		"sorted on parse": {
			value:      "[3, 1]",
			want:       ReleasedStages{1, 3},
			wantString: "[1,3]",
			wantHas:    map[int]bool{0: true, 1: true, 2: false, 3: true},
		},
		"YAML list": {
			value:      "- 2\n",
			want:       ReleasedStages{2},
			wantString: "[2]",
			wantHas:    map[int]bool{2: true},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, errs := ParseReleasedStages(tc.value, JobSetAnnotationPath(ReleasedAnnotationKey))
			if len(errs) > 0 {
				t.Fatalf("unexpected errors: %v", errs.ToAggregate())
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("stages (-want +got):\n%s", diff)
			}
			if got.String() != tc.wantString {
				t.Errorf("String() = %q, want %q", got.String(), tc.wantString)
			}
			for i, want := range tc.wantHas {
				if got.Has(i) != want {
					t.Errorf("Has(%d) = %v, want %v", i, got.Has(i), want)
				}
			}
		})
	}

	var r ReleasedStages
	if r.String() != "[]" {
		t.Errorf("nil String() = %q, want []", r.String())
	}
	r2 := r.With(2).With(1).With(2).With(0)
	if diff := cmp.Diff(ReleasedStages{1, 2}, r2); diff != "" {
		t.Errorf("With (-want +got):\n%s", diff)
	}
	if r != nil {
		t.Errorf("With modified its receiver: %v", r)
	}
}
