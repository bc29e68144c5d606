package main

import (
	"io"
	"slices"
	"strings"
	"testing"
)

func TestReadEventsAndCell(t *testing.T) {
	in := strings.Join([]string{
		`{"Action":"run","Test":"TestStories"}`,
		`{"Action":"output","Test":"TestStories/b.yaml/assess","Output":"    stories_test.go:79: n/a on JobSet v0.8.0: one predecessor only (needs JobSet v0.9.0 or later)\n"}`,
		`{"Action":"skip","Test":"TestStories/b.yaml/assess","Elapsed":0}`,
		`{"Action":"pass","Test":"TestStories/b.yaml","Elapsed":0}`,
		`{"Action":"pass","Test":"TestStories","Elapsed":12.5}`,
		`{"Action":"output","Test":"TestChange","Output":"    lifecycle_test.go:107: n/a on JobSet v0.10.1: no gate (needs JobSet v0.12.0 or later)\n"}`,
		`{"Action":"output","Test":"TestChange","Output":"--- SKIP: TestChange (0.00s)\n"}`,
		`{"Action":"skip","Test":"TestChange","Elapsed":0}`,
		`{"Action":"output","Test":"TestBad/x","Output":"    admission_test.go:40: want refused, got nil\n"}`,
		`{"Action":"fail","Test":"TestBad/x","Elapsed":1}`,
		`{"Action":"fail","Test":"TestBad","Elapsed":1}`,
		`{"Action":"fail","Elapsed":14}`,
	}, "\n")
	tests, pkgFailed := readEvents(strings.NewReader(in), io.Discard)
	if pkgFailed != "" {
		t.Errorf("package failure %q: the failure is a test's", pkgFailed)
	}
	want := []testResult{
		{Name: "TestStories/b.yaml/assess", Action: "skip", Reason: "n/a on JobSet v0.8.0: one predecessor only (needs JobSet v0.9.0 or later)"},
		{Name: "TestStories", Action: "pass", Elapsed: 12.5},
		{Name: "TestChange", Action: "skip", Reason: "n/a on JobSet v0.10.1: no gate (needs JobSet v0.12.0 or later)"},
		{Name: "TestBad", Action: "fail", Elapsed: 1, Reason: "x: want refused, got nil"},
	}
	if len(tests) != len(want) {
		t.Fatalf("tests %+v, want %+v", tests, want)
	}
	for i := range want {
		if tests[i] != want[i] {
			t.Errorf("test %d: %+v, want %+v", i, tests[i], want[i])
		}
	}
	keys := map[string]string{tests[0].Reason: "a", tests[2].Reason: "b"}
	for _, c := range []struct {
		tests []testResult
		keyOf func(string) string
		want  string
	}{
		{tests, nil, "**fail** 1/3: TestBad (2 n/a)"},
		{tests, func(r string) string { return keys[r] }, "**fail** 1/3: TestBad (2 n/a: a, b)"},
		{tests[:3], func(r string) string { return keys[r] }, "pass 1/2 (2 n/a: a, b)"},
		// a subtest n/a for the same reason as another counts, its key named once
		{append(tests[:3:3], testResult{Name: "TestStories/b.yaml/other", Action: "skip", Reason: tests[0].Reason}),
			func(r string) string { return keys[r] }, "pass 1/2 (3 n/a: a, b)"},
		{tests[1:2], nil, "pass 1/1"},
		{tests[2:3], func(r string) string { return keys[r] }, "all n/a (1 n/a: b)"},
		{nil, nil, "**fail**: no test ran"},
	} {
		if got := (&suiteResult{Tests: c.tests}).cell(c.keyOf); got != c.want {
			t.Errorf("cell %q, want %q", got, c.want)
		}
	}
	if got, want := (&suiteResult{Tests: tests[1:2], Failed: "go test: exit status 2"}).cell(nil), "**fail**: suite did not run"; got != want {
		t.Errorf("cell %q, want %q", got, want)
	}
}

// TestFailReason: a failed test's reason is what its failing subtests said, each named, not a
// later subtest's n/a (Kubernetes v1.35.4's TestAdmission once read "n/a on Kubernetes older
// than 1.37.0" where two cases had been admitted); a test failed without a message (a panic)
// gives its last lines.
func TestFailReason(t *testing.T) {
	in := strings.Join([]string{
		`{"Action":"output","Test":"TestAdmission/op/refused","Output":"    admission_test.go:90: admitted\n"}`,
		`{"Action":"fail","Test":"TestAdmission/op/refused","Elapsed":0}`,
		`{"Action":"output","Test":"TestAdmission/op","Output":"--- FAIL: TestAdmission/op (0.06s)\n"}`,
		`{"Action":"fail","Test":"TestAdmission/op","Elapsed":0}`,
		`{"Action":"output","Test":"TestAdmission/effect/refused","Output":"    admission_test.go:90: admitted\n"}`,
		`{"Action":"fail","Test":"TestAdmission/effect/refused","Elapsed":0}`,
		`{"Action":"output","Test":"TestAdmission/z/causes","Output":"    framework.go:12: n/a on Kubernetes older than 1.37.0: wording\n"}`,
		`{"Action":"skip","Test":"TestAdmission/z/causes","Elapsed":0}`,
		`{"Action":"fail","Test":"TestAdmission","Elapsed":3}`,
		`{"Action":"output","Test":"TestPanic","Output":"panic: boom\n"}`,
		`{"Action":"output","Test":"TestPanic","Output":"goroutine 7 [running]:\n"}`,
		`{"Action":"fail","Test":"TestPanic","Elapsed":0}`,
	}, "\n")
	tests, _ := readEvents(strings.NewReader(in), io.Discard)
	var got []string
	for _, r := range tests {
		if r.Action == "fail" {
			got = append(got, r.Name+": "+r.Reason)
		}
	}
	want := []string{
		"TestAdmission: op/refused: admitted; effect/refused: admitted",
		"TestPanic: panic: boom / goroutine 7 [running]:",
	}
	if !slices.Equal(got, want) {
		t.Errorf("failures %q, want %q", got, want)
	}
}

func TestSplitCombo(t *testing.T) {
	for arg, want := range map[string][2]string{
		"v1.37.2-v0.12.0":       {"v1.37.2", "v0.12.0"},
		"v1.38.0-beta.0-v0.8.0": {"v1.38.0-beta.0", "v0.8.0"},
		"v1.37.2":               {},
		"-v0.8.0":               {},
		"v1.37.2-":              {},
	} {
		kube, jobset, ok := splitCombo(arg)
		if ok != (want[0] != "") || kube != want[0] || jobset != want[1] {
			t.Errorf("splitCombo(%q) = %q, %q, %t; want %q", arg, kube, jobset, ok, want)
		}
	}
}
