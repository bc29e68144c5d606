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

// cell is the suite's entry in the table: fail (with the tests that failed), or pass with the
// number of top-level tests that passed, and n/a with the tests or subtests that cannot run on
// this combination.
func (s *suiteResult) cell() string {
	var passed, failed, na []string
	top := 0
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
			if n := shortName(t.Name); !slices.Contains(na, n) {
				na = append(na, n) // one feature's assessments, each skipped, once
			}
		}
	}
	var parts []string
	switch {
	case s.Failed != "":
		parts = append(parts, "**fail**: suite did not run")
	case len(failed) > 0:
		parts = append(parts, fmt.Sprintf("**fail** %d/%d: %s", len(failed), top, strings.Join(failed, ", ")))
	case len(passed) > 0:
		parts = append(parts, fmt.Sprintf("pass %d/%d", len(passed), top))
	case len(na) == 0:
		parts = append(parts, "**fail**: no test ran")
	}
	if len(na) > 0 {
		parts = append(parts, "n/a: "+strings.Join(na, ", "))
	}
	return strings.Join(parts, "; ")
}

// shortName is a test's name down to its feature: TestStories/story2.yaml, not its assessment.
func shortName(name string) string {
	if parts := strings.Split(name, "/"); len(parts) > 2 {
		return strings.Join(parts[:2], "/")
	}
	return name
}

// writeResults replaces what follows the marker line of file with the results of the run f.
func writeResults(file string, f *runFacts) error {
	head := "# Compatibility matrix\n\n"
	if old, err := os.ReadFile(file); err == nil {
		if i := bytes.Index(old, []byte(Marker)); i >= 0 {
			head = string(old[:i])
		}
	}
	var b strings.Builder
	b.WriteString(head + Marker + "\n\n")
	fmt.Fprintf(&b, "Run on %s (%s, %d CPUs, %s), taking %s, by:\n\n```sh\n%s\n```\n\n",
		f.Start.UTC().Format("2006-01-02 15:04 MST"), f.Platform, f.CPUs, f.Go, seconds(f.Seconds), f.Command)
	b.WriteString("Tests run per add-on (`go test -run`):\n\n")
	for _, s := range f.Suites {
		fmt.Fprintf(&b, "- %s: `^(%s)$`\n", s.Name, s.Run)
	}
	b.WriteString("\n| Kubernetes | JobSet |")
	for _, s := range f.Suites {
		b.WriteString(" " + s.Name + " |")
	}
	b.WriteString("\n|---|---|" + strings.Repeat("---|", len(f.Suites)) + "\n")
	for _, c := range f.Combos {
		fmt.Fprintf(&b, "| %s | %s |", c.Kube, c.JobSet)
		for _, s := range f.Suites {
			switch r := c.Suites[s.Name]; {
			case r != nil:
				b.WriteString(" " + r.cell() + " |")
			case c.Err != "":
				b.WriteString(" **fail**: combination did not run |")
			default:
				b.WriteString(" not run |")
			}
		}
		b.WriteString("\n")
	}
	b.WriteString("\n## Per combination\n")
	for _, c := range f.Combos {
		fmt.Fprintf(&b, "\n### Kubernetes %s, JobSet %s\n\n", c.Kube, c.JobSet)
		if c.Server != "" {
			fmt.Fprintf(&b, "apiserver reported %s; ", c.Server)
		}
		fmt.Fprintf(&b, "binaries: %s; %s.\n\n", strings.Join(c.Tools, ", "), seconds(c.Seconds))
		if c.Err != "" {
			fmt.Fprintf(&b, "**The combination failed**: %s\n\n", oneLine(c.Err))
		}
		for _, s := range f.Suites {
			r := c.Suites[s.Name]
			if r == nil {
				continue
			}
			if r.Failed != "" {
				fmt.Fprintf(&b, "- %s: **fail**: %s\n", s.Name, oneLine(r.Failed))
			}
			for _, t := range r.Tests {
				result := map[string]string{"pass": "pass", "fail": "**fail**", "skip": "n/a"}[t.Action]
				fmt.Fprintf(&b, "- %s `%s`: %s (%.1fs)", s.Name, t.Name, result, t.Elapsed)
				if t.Reason != "" {
					fmt.Fprintf(&b, ": %s", oneLine(t.Reason))
				}
				b.WriteString("\n")
			}
		}
	}
	return os.WriteFile(file, []byte(b.String()), 0o644)
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
