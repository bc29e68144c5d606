// Command compat runs the compatibility matrix (make e2e SUITE=compat): for each combination
// KUBE-JOBSET given as an argument (v1.37.2-v0.8.0), a fresh testbed on bin/testbed-KUBE-JOBSET
// (linked by make), the core e2e cases of every add-on's suite on it, one suite after another,
// then the testbed stopped. It writes the results into the file -out below its marker line:
// the date, the exact versions that ran, pass, fail or n/a (with the skip's reason) per add-on
// per combination, and the command. What is above the marker is kept as it is.
//
//	compat -out docs/compatibility.md -command "make e2e SUITE=compat" v1.37.2-v0.8.0 v1.34.4-v0.12.0
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/jobset-addons/jobset-addons/e2e/testbed"
)

// suites are the core cases run per add-on: its KEP stories or examples, its bad-input table,
// and (podgroups) the case that needs a JobSet feature gate. No chaos, no timing.
var suites = []struct{ name, run string }{
	{"volumeclaims", "TestStories|TestBadInputRefused"},
	{"resourceclaims", "TestKEP762Example|TestAdmission"},
	{"sequencer", "TestKEP672Story|TestFanIn|TestBadInputRefused"},
	{"podgroups", "TestStories|TestBadInputRefused|TestSuspendChangeResume"},
}

// Marker separates the hand-written part of the output file from the results written here.
const Marker = "<!-- Everything below is written by `make e2e SUITE=compat` (e2e/cmd/compat); do not edit it by hand. -->"

// testResult is one top-level test of one suite on one combination, or a subtest skipped.
type testResult struct {
	Name    string
	Action  string // pass, fail, skip
	Elapsed float64
	Reason  string // the skip's message, or the failure's last lines
}

// suiteResult is one suite on one combination.
type suiteResult struct {
	Tests []testResult
	// Failed is why the suite failed outside any test (setup, build, testbed), or "".
	Failed string
}

type combo struct {
	Kube, JobSet string
	// Server is the version the apiserver reported; Tools the versions of every binary linked.
	Server string
	Tools  []string
	Suites map[string]*suiteResult
	// Err is why the combination could not run at all (the testbed did not start).
	Err      string
	Duration time.Duration
}

func main() {
	out := flag.String("out", "", "file to write the results into, below its marker line")
	command := flag.String("command", "make e2e SUITE=compat", "the command, as the results name it")
	flag.Parse()
	if *out == "" || flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: compat -out FILE [-command CMD] KUBE-JOBSET...")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	start := time.Now().UTC()
	var combos []*combo
	failed := false
	for _, arg := range flag.Args() {
		kube, jobset, ok := splitCombo(arg)
		if !ok {
			fail(fmt.Errorf("%q: want KUBE-JOBSET, as v1.37.2-v0.12.0", arg))
		}
		c := &combo{Kube: kube, JobSet: jobset, Suites: map[string]*suiteResult{}}
		combos = append(combos, c)
		if err := runCombo(ctx, c); err != nil {
			c.Err = err.Error()
			logf("=== Kubernetes %s, JobSet %s failed: %v", kube, jobset, err)
		}
		for _, s := range c.Suites {
			failed = failed || s.failed()
		}
		failed = failed || c.Err != ""
		if ctx.Err() != nil {
			fail(ctx.Err())
		}
	}
	if err := writeResults(*out, start, *command, combos); err != nil {
		fail(err)
	}
	logf("Results written to %s", *out)
	if failed {
		logf("Some combinations failed: see %s", *out)
		os.Exit(1)
	}
}

// runCombo starts a fresh testbed for c, runs every suite on it, and always stops it.
func runCombo(ctx context.Context, c *combo) (err error) {
	tb, err := testbed.DefaultConfig()
	if err != nil {
		return err
	}
	// A directory of its own: never a testbed started with `make testbed-up`.
	tb.WorkDir = filepath.Join(tb.Root, ".testbed-compat")
	tb.Bins = filepath.Join(tb.Root, "bin", "testbed-"+c.Kube+"-"+c.JobSet)
	if got := tb.JobSetVersion(); got != c.JobSet {
		return fmt.Errorf("%s holds JobSet %q, not %s: run make e2e SUITE=compat", tb.Bins, got, c.JobSet)
	}
	c.Tools = toolVersions(tb.Bins)
	start := time.Now()
	defer func() { c.Duration = time.Since(start) }()
	logf("=== Kubernetes %s, JobSet %s: starting a fresh testbed from %s", c.Kube, c.JobSet, tb.Bins)
	// A testbed left in this directory by an interrupted run goes first.
	if err := testbed.Down(ctx, tb, logf); err != nil {
		return fmt.Errorf("stopping a testbed left over in %s: %w", tb.WorkDir, err)
	}
	defer func() {
		if derr := testbed.Down(context.WithoutCancel(ctx), tb, logf); derr != nil && err == nil {
			err = fmt.Errorf("testbed teardown: %w", derr)
		}
	}()
	if err := testbed.Up(ctx, tb, logf); err != nil {
		return fmt.Errorf("the testbed did not start: %w", err)
	}
	cs, err := tb.Clientset()
	if err != nil {
		return err
	}
	v, err := cs.Discovery().ServerVersion()
	if err != nil {
		return err
	}
	c.Server = v.GitVersion
	env := append(os.Environ(), "KUBECONFIG="+tb.Kubeconfig(), "TESTBED_DIR="+tb.WorkDir, "TESTBED_BIN_DIR="+tb.Bins)
	for _, s := range suites {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		logf("--- %s on Kubernetes %s, JobSet %s: -run '^(%s)$'", s.name, c.Kube, c.JobSet, s.run)
		logPath := filepath.Join(tb.WorkDir, "logs", fmt.Sprintf("%s-%s-%s.json", c.Kube, c.JobSet, s.name))
		c.Suites[s.name] = runSuite(ctx, env, s.name, s.run, logPath)
		logf("--- %s: %s (log: %s)", s.name, c.Suites[s.name].cell(), logPath)
	}
	return nil
}

// runSuite runs the tests run of the suite name with `go test -json`, keeping its output in
// logPath, and reads each top-level test's result.
func runSuite(ctx context.Context, env []string, name, run, logPath string) *suiteResult {
	res := &suiteResult{}
	if err := os.MkdirAll(filepath.Dir(logPath), 0o755); err != nil {
		res.Failed = err.Error()
		return res
	}
	logFile, err := os.Create(logPath)
	if err != nil {
		res.Failed = err.Error()
		return res
	}
	defer logFile.Close()
	cmd := exec.CommandContext(ctx, "go", "test", "-count=1", "-json", "-p", "1", "-timeout", "20m",
		"-run", "^("+run+")$", "./suites/"+name+"/")
	cmd.Env = append(env, "GOWORK=off")
	var stderr bytes.Buffer
	cmd.Stderr = io.MultiWriter(&stderr, logFile)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		res.Failed = err.Error()
		return res
	}
	if err := cmd.Start(); err != nil {
		res.Failed = err.Error()
		return res
	}
	res.Tests, res.Failed = readEvents(io.TeeReader(stdout, logFile))
	if err := cmd.Wait(); err != nil && res.Failed == "" && !res.failed() {
		res.Failed = fmt.Sprintf("go test: %v: %s", err, lastLines(stderr.String(), 5))
	}
	return res
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
func readEvents(r io.Reader) (tests []testResult, pkgFailed string) {
	outputs := map[string][]string{} // by top-level test, its subtests' output included
	own := map[string][]string{}     // by test
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
			fmt.Fprint(os.Stderr, e.Output)
		case e.Action == "output":
			outputs[top] = append(outputs[top], e.Output)
			own[e.Test] = append(own[e.Test], e.Output)
			fmt.Fprint(os.Stderr, e.Output)
		case e.Test != "" && e.Test != top && e.Action == "skip":
			tests = append(tests, testResult{Name: e.Test, Action: e.Action, Elapsed: e.Elapsed, Reason: skipReason(own[e.Test])})
		case e.Test != "" && e.Test == top && (e.Action == "pass" || e.Action == "fail" || e.Action == "skip"):
			t := testResult{Name: e.Test, Action: e.Action, Elapsed: e.Elapsed}
			switch e.Action {
			case "skip":
				t.Reason = skipReason(own[top])
			case "fail":
				t.Reason = failReason(outputs[top])
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

// failReason is the first error lines of a failed test: its t.Error or t.Fatal messages.
func failReason(out []string) string {
	var msgs []string
	for _, line := range out {
		if loc := fileLine.FindStringIndex(line); loc != nil && !strings.Contains(line, "--- ") {
			msgs = append(msgs, strings.TrimSpace(line[loc[1]:]))
		}
	}
	if len(msgs) == 0 {
		return lastLines(strings.Join(out, ""), 3)
	}
	return msgs[len(msgs)-1]
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " / ")
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

// toolVersions names the versioned directory of each binary linked in dir (kube-v1.34.4).
func toolVersions(dir string) []string {
	links, _ := filepath.Glob(filepath.Join(dir, "*"))
	var out []string
	for _, l := range links {
		if target, err := os.Readlink(l); err == nil {
			if v := filepath.Base(filepath.Dir(target)); !slices.Contains(out, v) {
				out = append(out, v)
			}
		}
	}
	slices.Sort(out)
	return out
}

// writeResults replaces what follows the marker line of file with the results.
func writeResults(file string, start time.Time, command string, combos []*combo) error {
	head := "# Compatibility matrix\n\n"
	if old, err := os.ReadFile(file); err == nil {
		if i := bytes.Index(old, []byte(Marker)); i >= 0 {
			head = string(old[:i])
		}
	}
	var b strings.Builder
	b.WriteString(head + Marker + "\n\n")
	fmt.Fprintf(&b, "Run on %s (%s, %d CPUs, %s), taking %s, by:\n\n```sh\n%s\n```\n\n",
		start.Format("2006-01-02 15:04 MST"), runtime.GOOS+"/"+runtime.GOARCH, runtime.NumCPU(), runtime.Version(),
		time.Since(start).Round(time.Second), command)
	b.WriteString("Tests run per add-on (`go test -run`):\n\n")
	for _, s := range suites {
		fmt.Fprintf(&b, "- %s: `^(%s)$`\n", s.name, s.run)
	}
	b.WriteString("\n| Kubernetes | JobSet |")
	for _, s := range suites {
		b.WriteString(" " + s.name + " |")
	}
	b.WriteString("\n|---|---|" + strings.Repeat("---|", len(suites)) + "\n")
	for _, c := range combos {
		fmt.Fprintf(&b, "| %s | %s |", c.Kube, c.JobSet)
		for _, s := range suites {
			switch r := c.Suites[s.name]; {
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
	for _, c := range combos {
		fmt.Fprintf(&b, "\n### Kubernetes %s, JobSet %s\n\n", c.Kube, c.JobSet)
		if c.Server != "" {
			fmt.Fprintf(&b, "apiserver reported %s; ", c.Server)
		}
		fmt.Fprintf(&b, "binaries: %s; %s.\n\n", strings.Join(c.Tools, ", "), c.Duration.Round(time.Second))
		if c.Err != "" {
			fmt.Fprintf(&b, "**The combination failed**: %s\n\n", oneLine(c.Err))
		}
		for _, s := range suites {
			r := c.Suites[s.name]
			if r == nil {
				continue
			}
			if r.Failed != "" {
				fmt.Fprintf(&b, "- %s: **fail**: %s\n", s.name, oneLine(r.Failed))
			}
			for _, t := range r.Tests {
				result := map[string]string{"pass": "pass", "fail": "**fail**", "skip": "n/a"}[t.Action]
				fmt.Fprintf(&b, "- %s `%s`: %s (%.1fs)", s.name, t.Name, result, t.Elapsed)
				if t.Reason != "" {
					fmt.Fprintf(&b, ": %s", oneLine(t.Reason))
				}
				b.WriteString("\n")
			}
		}
	}
	return os.WriteFile(file, []byte(b.String()), 0o644)
}

// oneLine makes s fit in a Markdown list item.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 400 {
		s = s[:400] + "…"
	}
	return strings.ReplaceAll(s, "|", `\|`)
}

// splitCombo splits KUBE-JOBSET at its last "-": a Kubernetes pre-release has one of its own
// (v1.38.0-beta.0-v0.12.0).
func splitCombo(arg string) (kube, jobset string, ok bool) {
	i := strings.LastIndex(arg, "-")
	if i <= 0 || i == len(arg)-1 {
		return "", "", false
	}
	return arg[:i], arg[i+1:], true
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s compat: %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "compat:", err)
	os.Exit(1)
}
