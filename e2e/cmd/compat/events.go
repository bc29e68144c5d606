package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
)

// testResult is one top-level test of one suite on one combination, or a subtest skipped.
type testResult struct {
	Name    string
	Action  string // pass, fail, skip
	Elapsed float64
	Reason  string // the skip's message, or the failure's last lines
}

// event is one line of `go test -json`.
type event struct {
	Action  string
	Test    string
	Output  string
	Elapsed float64
}

// fileLine is how the testing package starts a t.Log, t.Skip or t.Error line.
var fileLine = regexp.MustCompile(`^\s+\S+\.go:\d+: `)

// readEvents reads `go test -json` output: each top-level test's result, with its skip
// message or its failure's last lines, each subtest skipped (a story that cannot run on this
// combination), and why the package failed outside any test.
func readEvents(r io.Reader, echo io.Writer) (tests []testResult, pkgFailed string) {
	outputs := map[string][]string{} // by top-level test, its subtests' output included
	own := map[string][]string{}     // by test
	failed := map[string][]string{}  // by top-level test, the tests below it that failed
	var pkgOutput []string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var e event
		if json.Unmarshal(sc.Bytes(), &e) != nil {
			continue
		}
		top, _, _ := strings.Cut(e.Test, "/")
		switch {
		case e.Action == "output" && e.Test == "":
			pkgOutput = append(pkgOutput, e.Output)
			fmt.Fprint(echo, e.Output)
		case e.Action == "output":
			outputs[top] = append(outputs[top], e.Output)
			own[e.Test] = append(own[e.Test], e.Output)
			fmt.Fprint(echo, e.Output)
		case e.Test != "" && e.Test != top && e.Action == "skip":
			tests = append(tests, testResult{Name: e.Test, Action: e.Action, Elapsed: e.Elapsed, Reason: skipReason(own[e.Test])})
		case e.Test != "" && e.Test != top && e.Action == "fail":
			failed[top] = append(failed[top], e.Test)
		case e.Test != "" && e.Test == top && (e.Action == "pass" || e.Action == "fail" || e.Action == "skip"):
			t := testResult{Name: e.Test, Action: e.Action, Elapsed: e.Elapsed}
			switch e.Action {
			case "skip":
				t.Reason = skipReason(own[top])
			case "fail":
				t.Reason = failReason(top, append(failed[top], top), own, outputs[top])
			}
			tests = append(tests, t)
		case e.Test == "" && e.Action == "fail":
			if !slices.ContainsFunc(tests, func(t testResult) bool { return t.Action == "fail" }) {
				pkgFailed = "the suite failed outside its tests: " + lastLines(strings.Join(pkgOutput, ""), 6)
			}
		}
	}
	return tests, pkgFailed
}

// skipReason is the message of the t.Skip in a test's output.
func skipReason(out []string) string {
	for i := len(out) - 1; i >= 0; i-- {
		if loc := fileLine.FindStringIndex(out[i]); loc != nil {
			return strings.TrimSpace(out[i][loc[1]:])
		}
	}
	return "skipped without a message"
}

// failReason is what a failed test said: the last t.Error or t.Fatal message of each test in
// failed (top's subtests that failed, named below top, then top itself), or, where none said
// anything (a panic, a timeout), the last lines of out, top's whole output. What a subtest that
// did not fail logged (an n/a's skip message) is never taken for the failure.
func failReason(top string, failed []string, own map[string][]string, out []string) string {
	var parts []string
	for _, name := range failed {
		msgs := messages(own[name])
		if len(msgs) == 0 {
			continue // a parent that failed because a subtest did
		}
		msg := msgs[len(msgs)-1]
		if rel, ok := strings.CutPrefix(name, top+"/"); ok {
			msg = rel + ": " + msg
		}
		parts = append(parts, msg)
	}
	if len(parts) == 0 {
		return lastLines(strings.Join(out, ""), 3)
	}
	return strings.Join(parts, "; ")
}

// messages are the t.Log, t.Error or t.Fatal messages in a test's output.
func messages(out []string) []string {
	var msgs []string
	for _, line := range out {
		if loc := fileLine.FindStringIndex(line); loc != nil && !strings.Contains(line, "--- ") {
			msgs = append(msgs, strings.TrimSpace(line[loc[1]:]))
		}
	}
	return msgs
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " / ")
}
