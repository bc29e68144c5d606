package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const (
	policies  = "metadata.annotations[volumeclaims.jobset-addons.io/policies]"
	templates = "spec.replicatedJobs[0].template.metadata.annotations[resourceclaims.jobset-addons.io/templates]"
	dependsOn = "spec.replicatedJobs[0].template.metadata.annotations[sequencer.jobset-addons.io/depends-on]"
)

// TestLint: lint prints each problem of each object with its file, kind, name, the path of the
// field and the webhook's message, and exits 1; a runtime's problems are at its
// spec.template paths, a TrainJob's at those of the JobSet its runtime gives it; a TrainJob
// whose runtime is not in the input is noted, other kinds are skipped; unreadable input exits 2.
func TestLint(t *testing.T) {
	for name, tc := range map[string]struct {
		args       []string
		stdin      string
		wantOut    []string
		wantErrOut string
		wantCode   int
	}{
		"a retention value that does not exist, a misspelt field": {
			args: []string{"-f", "testdata/lint/bad-retention.yaml"},
			wantOut: []string{
				`testdata/lint/bad-retention.yaml: JobSet/train: ` + policies + `[0].retentionPolicy.whenFaild: Unsupported value: "whenFaild": supported values: "expireAfterUnused", "finishedPods", "nodeLostGracePeriod", "whenComplete", "whenDeleted", "whenFailed", "whenNodeLost", "whenNodeUnreachable"`,
				`testdata/lint/bad-retention.yaml: JobSet/train: ` + policies + `[0].retentionPolicy.whenComplete: Unsupported value: "Keep": supported values: "Delete", "Retain"`,
			},
			wantCode: 1,
		},
		"a claim template for a container the pod does not have": {
			args:     []string{"-f", "testdata/lint/missing-container.yaml"},
			wantOut:  []string{`testdata/lint/missing-container.yaml: JobSet/imex: ` + templates + `[0].containers[0]: Invalid value: "trainer": no container or init container of the pod template has this name`},
			wantCode: 1,
		},
		"a stage cycle, from stdin": {
			args:     []string{"-f", "-"},
			stdin:    read(t, "testdata/lint/stage-cycle.yaml"),
			wantOut:  []string{`-: JobSet/pipeline: ` + dependsOn + `[0].name: Invalid value: "train": dependency cycle: prepare -> train -> prepare (each depends on the next)`},
			wantCode: 1,
		},
		"a runtime and its TrainJob; a TrainJob without its runtime; a Service": {
			args: []string{"-f", "testdata/lint/runtime.yaml"},
			wantOut: []string{
				`testdata/lint/runtime.yaml: TrainingRuntime/torch: spec.template.` + dependsOn + `: Forbidden: may not be set when metadata.annotations[sequencer.jobset-addons.io/execution-policy] is InOrder`,
				`testdata/lint/runtime.yaml: TrainJob/run-1: ` + dependsOn + `: Forbidden: may not be set when metadata.annotations[sequencer.jobset-addons.io/execution-policy] is InOrder`,
			},
			wantErrOut: `testdata/lint/runtime.yaml: TrainJob/run-2: not checked: its ClusterTrainingRuntime "elsewhere" is not among the input (give both)` + "\n",
			wantCode:   1,
		},
		"a Warning only": {
			args:  []string{"-f", "-"},
			stdin: "apiVersion: jobset.x-k8s.io/v1alpha2\nkind: JobSet\nmetadata:\n  name: a\n  annotations:\n    sequencer.jobset-addons.io/execution-policy: InOrder\n    sequencer.jobset-addons.io/start-barrier: JobSet\nspec:\n  replicatedJobs:\n  - {name: prep, template: {spec: {template: {spec: {containers: [{name: c, image: i}]}}}}}\n  - {name: train, template: {spec: {template: {spec: {containers: [{name: c, image: i}]}}}}}\n",
			wantOut: []string{`-: JobSet/a: warning: metadata.annotations[sequencer.jobset-addons.io/start-barrier]: JobSet on a JobSet that runs in 2 stages ([prep] then [train]) makes a barrier per stage, as Stage does: ` +
				`the pods of a stage wait for each other; a barrier across stages could never open, since a later stage's pods are made only after an earlier stage started`},
		},
		"a directory": {
			args:     []string{"-f", "testdata/lint"},
			wantCode: 1,
			wantOut:  nil, // checked by count below
		},
		"YAML that does not parse": {args: []string{"-f", "-"}, stdin: "{a: [\n", wantCode: 2,
			wantErrOut: "kubectl jobset-addons lint: -: error converting YAML to JSON: yaml: line 1: did not find expected node content\n"},
		"a file that does not exist": {args: []string{"-f", "testdata/lint/none.yaml"}, wantCode: 2,
			wantErrOut: "kubectl jobset-addons lint: stat testdata/lint/none.yaml: no such file or directory\n"},
		"no -f":  {args: nil, wantCode: 2},
		"--help": {args: []string{"--help"}, wantCode: 0},
	} {
		t.Run(name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := Lint(tc.args, strings.NewReader(tc.stdin), &out, &errOut)
			if code != tc.wantCode {
				t.Errorf("exit %d, want %d; stderr: %s", code, tc.wantCode, errOut.String())
			}
			got := lines(out.String())
			if name == "a directory" {
				if len(got) != 6 {
					t.Errorf("%d lines, want the 6 problems of the files:\n%s", len(got), out.String())
				}
				return
			}
			if diff := cmp.Diff(tc.wantOut, got); diff != "" {
				t.Errorf("output (-want +got):\n%s", diff)
			}
			if tc.wantErrOut != "" && errOut.String() != tc.wantErrOut {
				t.Errorf("stderr %q, want %q", errOut.String(), tc.wantErrOut)
			}
		})
	}
}

// TestLintJSON: --output json is the list of findings, [] when there are none.
func TestLintJSON(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := Lint([]string{"-o", "json", "-f", "testdata/lint/missing-container.yaml"}, nil, &out, &errOut); code != 1 {
		t.Fatalf("exit %d, want 1: %s", code, errOut.String())
	}
	var got []finding
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	want := []finding{{File: "testdata/lint/missing-container.yaml", Kind: "JobSet", Name: "imex", Field: templates + "[0].containers[0]",
		Message: `Invalid value: "trainer": no container or init container of the pod template has this name`}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("findings (-want +got):\n%s", diff)
	}
	out.Reset()
	if code := Lint([]string{"-o", "json", "-f", "../../examples/basic-jobset.yaml"}, nil, &out, &errOut); code != 0 || strings.TrimSpace(out.String()) != "[]" {
		t.Errorf("exit %d, output %q, want 0 and []", code, out.String())
	}
}

// TestLintExamples: every manifest of examples/ and of the Trainer e2e suite's runtimes is
// clean: no problem (Warnings allowed), exit 0.
func TestLintExamples(t *testing.T) {
	for _, dir := range []string{"../../examples", "../../e2e/suites/trainer/testdata"} {
		var out, errOut bytes.Buffer
		code := Lint([]string{"-f", dir}, nil, &out, &errOut)
		if code != 0 {
			t.Errorf("lint -f %s: exit %d:\n%s%s", dir, code, out.String(), errOut.String())
		}
		for _, l := range lines(out.String()) {
			if !strings.Contains(l, ": warning: ") {
				t.Errorf("lint -f %s: %s", dir, l)
			}
		}
	}
	// The examples are JobSets: something was checked.
	files, _ := filepath.Glob("../../examples/*/*.yaml")
	if len(files) == 0 {
		t.Fatal("no examples")
	}
}

func read(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func lines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}
