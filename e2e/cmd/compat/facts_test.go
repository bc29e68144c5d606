package main

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestLoadRun: the facts a run writes and its logs give back each suite's results; a suite
// whose log could not be made is failed with the run's reason; a log the facts name and that
// is missing is an error.
func TestLoadRun(t *testing.T) {
	dir := t.TempDir()
	f := &runFacts{Command: "make e2e SUITE=compat", Start: time.Date(2026, 12, 7, 21, 20, 0, 0, time.UTC),
		Seconds: 1674, Platform: "linux/amd64", CPUs: 2, Go: "go1.26.8", Suites: suites[:2],
		Combos: []*combo{{Kube: "v1.34.4", JobSet: "v0.8.0", Server: "v1.34.4", Tools: []string{"kube-v1.34.4"},
			Ran: []string{"volumeclaims", "resourceclaims"}, Seconds: 102,
			SuiteErrs: map[string]string{"resourceclaims": "open log: permission denied"}}}}
	if err := writeFacts(dir, f); err != nil {
		t.Fatal(err)
	}
	log := strings.Join([]string{
		`{"Action":"output","Test":"TestStories/b.yaml/x","Output":"    stories_test.go:79: n/a on JobSet v0.8.0: one predecessor only\n"}`,
		`{"Action":"skip","Test":"TestStories/b.yaml/x","Elapsed":0}`,
		`go: downloading something (stderr, not JSON)`,
		`{"Action":"pass","Test":"TestStories","Elapsed":12.5}`,
	}, "\n")
	if err := os.WriteFile(filepath.Join(dir, "v1.34.4-v0.8.0-volumeclaims.json"), []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := loadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]*suiteResult{
		"volumeclaims": {Tests: []testResult{
			{Name: "TestStories/b.yaml/x", Action: "skip", Reason: "n/a on JobSet v0.8.0: one predecessor only"},
			{Name: "TestStories", Action: "pass", Elapsed: 12.5},
		}},
		"resourceclaims": {Failed: "open log: permission denied"},
	}
	if !reflect.DeepEqual(got.Combos[0].Suites, want) {
		t.Errorf("suites %+v, want %+v", got.Combos[0].Suites, want)
	}
	got.Combos[0].Suites = nil
	if !reflect.DeepEqual(got, f) {
		t.Errorf("facts %+v, want %+v", got, f)
	}
	f.Combos[0].SuiteErrs = nil
	if err := writeFacts(dir, f); err != nil {
		t.Fatal(err)
	}
	if _, err := loadRun(dir); err == nil {
		t.Error("loadRun without resourceclaims' log: no error")
	}
}
