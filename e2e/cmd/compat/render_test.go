package main

import (
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "write testdata/results.golden.md from what the code writes")

// goldenRun is a run of two suites on four combinations: n/a of two reasons in one cell, the
// same reasons shared across cells and suites, a failing test, a suite that failed outside its
// tests, and a combination whose testbed did not start.
func goldenRun() *runFacts {
	older := "n/a on Kubernetes older than 1.37.0: an older API server words some causes otherwise"
	noWorkload := "n/a: the apiserver does not serve the Workload API"
	pred := "n/a on JobSet v0.8.0: dependsOn allows one predecessor (needs JobSet v0.9.0 or later)"
	skip := func(name, reason string) testResult { return testResult{Name: name, Action: "skip", Reason: reason} }
	pass := func(name string, s float64) testResult { return testResult{Name: name, Action: "pass", Elapsed: s} }
	bad := func(reason string) *suiteResult {
		return &suiteResult{Tests: []testResult{
			skip("TestBadInputRefused/bad/a/causes", reason), skip("TestBadInputRefused/bad/b/causes", reason),
			pass("TestBadInputRefused", 2.9),
			skip("TestStories/kubernetes-gang.yaml/gang", noWorkload), pass("TestStories", 8.8),
			skip("TestSuspendChangeResume", pred),
		}}
	}
	tools := []string{"jobset-v0.8.0", "kube-v1.34.4"}
	return &runFacts{Command: "make e2e SUITE=compat", Start: time.Date(2026, 12, 7, 21, 20, 0, 0, time.UTC),
		Seconds: 1674, Platform: "linux/amd64", CPUs: 2, Go: "go1.26.8",
		Suites: []suiteSpec{{"podgroups", "TestStories|TestBadInputRefused|TestSuspendChangeResume"},
			{"resourceclaims", "TestKEP762Example|TestAdmission"}},
		Combos: []*combo{
			{Kube: "v1.34.4", JobSet: "v0.8.0", Server: "v1.34.4", Tools: tools, Seconds: 102, Suites: map[string]*suiteResult{
				"podgroups": bad(older),
				"resourceclaims": {Tests: []testResult{
					skip("TestAdmission/x/causes", older), skip("TestAdmission/y/causes", older), pass("TestAdmission", 2.9),
					pass("TestKEP762Example", 6.5)}}}},
			{Kube: "v1.35.4", JobSet: "v0.8.0", Server: "v1.35.4", Tools: tools, Seconds: 96, Suites: map[string]*suiteResult{
				"podgroups": bad(older),
				"resourceclaims": {Tests: []testResult{
					skip("TestAdmission/x/causes", older), skip("TestAdmission/y/causes", older),
					{Name: "TestAdmission", Action: "fail", Elapsed: 2.9, Reason: "op/refused: admitted"},
					pass("TestKEP762Example", 6.4)}}}},
			{Kube: "v1.37.2", JobSet: "v0.8.0", Server: "v1.37.2", Tools: tools, Seconds: 123, Suites: map[string]*suiteResult{
				"podgroups": {Tests: []testResult{pass("TestBadInputRefused", 2.2), pass("TestStories", 29.4),
					skip("TestSuspendChangeResume", pred)}},
				"resourceclaims": {Failed: "go test: exit status 1: build failed"}}},
			{Kube: "v1.37.2", JobSet: "v0.12.0", Tools: tools, Err: "the testbed did not start: etcd", Suites: map[string]*suiteResult{}},
		}}
}

func TestResultsGolden(t *testing.T) {
	got := results(goldenRun())
	path := filepath.Join("testdata", "results.golden.md")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("results differ from %s (go test -update to write it):\n%s", path, got)
	}
}

// TestWriteResults: what is above the marker is kept; a file without one gets a title.
func TestWriteResults(t *testing.T) {
	file := filepath.Join(t.TempDir(), "compatibility.md")
	if err := os.WriteFile(file, []byte("# Hand-written\n\nThe table below.\n\n"+Marker+"\n\nold results\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f := goldenRun()
	for _, want := range []string{"# Hand-written\n\nThe table below.\n\n", ""} {
		if want == "" {
			os.Remove(file)
			want = "# Compatibility matrix\n\n"
		}
		if err := writeResults(file, f); err != nil {
			t.Fatal(err)
		}
		got, _ := os.ReadFile(file)
		if want += Marker + "\n\n" + results(f); string(got) != want {
			t.Errorf("wrote %q, want %q", got, want)
		}
	}
}

func TestDescribeCells(t *testing.T) {
	cells := []pair{{"v1.34.4", "v0.8.0"}, {"v1.34.4", "v0.10.1"}, {"v1.35.4", "v0.8.0"}, {"v1.35.4", "v0.10.1"},
		{"v1.37.2", "v0.8.0"}, {"v1.38.0-beta.0", "v0.8.0"}}
	want := "Kubernetes v1.34.4, v1.35.4 with JobSet v0.8.0, v0.10.1; v1.37.2, v1.38.0-beta.0 with JobSet v0.8.0"
	if got := describeCells(cells); got != want {
		t.Errorf("describeCells: %q, want %q", got, want)
	}
	for i, want := range map[int]string{0: "a", 25: "z", 26: "aa", 27: "ab", 52: "ba"} {
		if got := key(i); got != want {
			t.Errorf("key(%d) = %q, want %q", i, got, want)
		}
	}
}
