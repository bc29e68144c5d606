package main

import (
	"bytes"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"
)

// suiteResult is one suite on one combination.
type suiteResult struct {
	Tests []testResult
	// Failed is why the suite failed outside any test (setup, build, testbed), or "".
	Failed string
}

func (s *suiteResult) failed() bool {
	return s.Failed != "" || slices.ContainsFunc(s.Tests, func(t testResult) bool { return t.Action == "fail" })
}

// cell is the suite's entry in the table: pass with the number of top-level tests that passed
// of those run, or fail with the tests that failed; then how many tests or subtests were n/a
// and, where keyOf is given, the keys of their reasons: "pass 2/2 (36 n/a: a)".
func (s *suiteResult) cell(keyOf func(string) string) string {
	var passed, failed, keys []string
	top, na := 0, 0
	for _, t := range s.Tests {
		if !strings.Contains(t.Name, "/") {
			top++
		}
		switch t.Action {
		case "pass":
			passed = append(passed, t.Name)
		case "fail":
			failed = append(failed, t.Name)
		case "skip":
			na++
			if keyOf != nil && !slices.Contains(keys, keyOf(t.Reason)) {
				keys = append(keys, keyOf(t.Reason))
			}
		}
	}
	slices.SortFunc(keys, keyLess)
	naNote := fmt.Sprintf(" (%d n/a)", na)
	if len(keys) > 0 {
		naNote = fmt.Sprintf(" (%d n/a: %s)", na, strings.Join(keys, ", "))
	}
	var head string
	switch {
	case s.Failed != "":
		head = "**fail**: suite did not run"
	case len(failed) > 0:
		head = fmt.Sprintf("**fail** %d/%d: %s", len(failed), top, strings.Join(failed, ", "))
	case len(passed) > 0:
		head = fmt.Sprintf("pass %d/%d", len(passed), top)
	case na == 0:
		return "**fail**: no test ran"
	default:
		head = "all n/a"
	}
	if na == 0 {
		return head
	}
	return head + naNote
}

// writeResults replaces what follows the marker line of file with the results of the run f.
func writeResults(file string, f *runFacts) error {
	head := "# Compatibility matrix\n\n"
	if old, err := os.ReadFile(file); err == nil {
		if i := bytes.Index(old, []byte(Marker)); i >= 0 {
			head = string(old[:i])
		}
	}
	return os.WriteFile(file, []byte(head+Marker+"\n\n"+results(f)), 0o644)
}

// results is what writeResults writes below the marker: the run, the table, why each n/a, and
// per combination what ran.
func results(f *runFacts) string {
	var b strings.Builder
	fmt.Fprintf(&b, "## Last run of the matrix\n\nRun on %s (%s, %d CPUs, %s), taking %s, by:\n\n```sh\n%s\n```\n\n",
		f.Start.UTC().Format("2006-01-02 15:04 MST"), f.Platform, f.CPUs, f.Go, seconds(f.Seconds), f.Command)
	b.WriteString("Tests run per add-on (`go test -run`):\n\n")
	for _, s := range f.Suites {
		fmt.Fprintf(&b, "- %s: `^(%s)$`\n", s.Name, s.Run)
	}
	b.WriteString("\nIn each cell: `pass P/T`, P of the add-on's T top-level tests passed and none failed, or " +
		"`**fail** F/T` and the tests that failed; in brackets, how many tests or subtests were n/a there " +
		"(skipped: what they check does not exist on that pair) and the keys of their reasons, listed under the table.\n")
	x := indexNA(f)
	writeTable(&b, f, x)
	writeReasons(&b, x)
	b.WriteString("\n## Per combination\n")
	for _, c := range f.Combos {
		writeCombo(&b, f, c, x)
	}
	return b.String()
}

// writeTable writes the table: a row per combination, a column per suite.
func writeTable(b *strings.Builder, f *runFacts, x *naIndex) {
	b.WriteString("\n| Kubernetes | JobSet |")
	for _, s := range f.Suites {
		b.WriteString(" " + s.Name + " |")
	}
	b.WriteString("\n|---|---|" + strings.Repeat("---|", len(f.Suites)) + "\n")
	for _, c := range f.Combos {
		fmt.Fprintf(b, "| %s | %s |", c.Kube, c.JobSet)
		for _, s := range f.Suites {
			switch r := c.Suites[s.Name]; {
			case r != nil:
				b.WriteString(" " + r.cell(x.keyOf) + " |")
			case c.Err != "":
				b.WriteString(" **fail**: combination did not run |")
			default:
				b.WriteString(" not run |")
			}
		}
		b.WriteString("\n")
	}
}

// writeReasons writes each n/a reason once, with the suites, cells and tests it applies to.
func writeReasons(b *strings.Builder, x *naIndex) {
	if len(x.reasons) == 0 {
		return
	}
	b.WriteString("\nWhy n/a, by key:\n\n")
	for _, r := range x.reasons {
		fmt.Fprintf(b, "- **%s**: %s\n", r.key, oneLine(r.text))
		for _, u := range r.uses {
			fmt.Fprintf(b, "  - %s on %s: %s\n", u.suite, describeCells(u.cells), oneLine(u.tests))
		}
	}
}

// writeCombo writes what ran on c: the apiserver, the binaries, how long, and each top-level
// test's result, a failure with what it said (the n/a subtests are in the reasons).
func writeCombo(b *strings.Builder, f *runFacts, c *combo, x *naIndex) {
	fmt.Fprintf(b, "\n### Kubernetes %s, JobSet %s\n\n", c.Kube, c.JobSet)
	if c.Server != "" {
		fmt.Fprintf(b, "apiserver reported %s; ", c.Server)
	}
	fmt.Fprintf(b, "binaries: %s; %s.\n\n", strings.Join(c.Tools, ", "), seconds(c.Seconds))
	if c.Err != "" {
		fmt.Fprintf(b, "**The combination failed**: %s\n\n", oneLine(c.Err))
	}
	for _, s := range f.Suites {
		r := c.Suites[s.Name]
		if r == nil {
			continue
		}
		if r.Failed != "" {
			fmt.Fprintf(b, "- %s: **fail**: %s\n", s.Name, oneLine(r.Failed))
		}
		for _, t := range r.Tests {
			switch {
			case strings.Contains(t.Name, "/"):
			case t.Action == "skip":
				fmt.Fprintf(b, "- %s `%s`: n/a: %s\n", s.Name, t.Name, x.keyOf(t.Reason))
			case t.Action == "fail":
				fmt.Fprintf(b, "- %s `%s`: **fail** (%.1fs): %s\n", s.Name, t.Name, t.Elapsed, oneLine(t.Reason))
			default:
				fmt.Fprintf(b, "- %s `%s`: %s (%.1fs)\n", s.Name, t.Name, t.Action, t.Elapsed)
			}
		}
	}
}

// seconds is s seconds, to the second.
func seconds(s float64) time.Duration {
	return time.Duration(s * float64(time.Second)).Round(time.Second)
}

// oneLine makes s fit in a Markdown list item.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 400 {
		s = s[:400] + "…"
	}
	return strings.ReplaceAll(s, "|", `\|`)
}
