// Command compat runs the compatibility matrix (make e2e SUITE=compat): for each combination
// KUBE-JOBSET given as an argument (v1.37.2-v0.8.0), a fresh testbed on bin/testbed-KUBE-JOBSET
// (linked by make), the core e2e cases of every add-on's suite on it, one suite after another,
// then the testbed stopped. Each suite's `go test -json` goes to .testbed-compat/logs/, and the
// run's facts (when, which command, per combination the versions that ran and how long) to
// facts.json beside them. From those two it writes the results into the file -out below its
// marker line: per add-on per combination pass, fail or n/a, why each n/a, and the facts. What
// is above the marker is kept as it is. -render-from writes them again from such a directory,
// running nothing.
//
//	compat -out docs/compatibility.md -command "make e2e SUITE=compat" v1.37.2-v0.8.0 v1.34.4-v0.12.0
//	compat -out docs/compatibility.md -render-from .testbed-compat/logs
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/jobset-addons/jobset-addons/e2e/testbed"
)

// suites are the core cases run per add-on: its KEP stories or examples, its bad-input table,
// and (podgroups) the case that needs a JobSet feature gate. No chaos, no timing.
var suites = []suiteSpec{
	{"volumeclaims", "TestStories|TestBadInputRefused"},
	{"resourceclaims", "TestKEP762Example|TestAdmission"},
	{"sequencer", "TestKEP672Story|TestFanIn|TestBadInputRefused"},
	{"podgroups", "TestStories|TestBadInputRefused|TestSuspendChangeResume"},
}

// Marker separates the hand-written part of the output file from the results written here.
const Marker = "<!-- Everything below is written by `make e2e SUITE=compat` (e2e/cmd/compat); do not edit it by hand. -->"

// workDir is the testbed's directory, below the repository's root: never that of a testbed
// started with `make testbed-up`. Its logs/ keeps each suite's log and the run's facts.
const workDir = ".testbed-compat"

func main() {
	out := flag.String("out", "", "file to write the results into, below its marker line")
	command := flag.String("command", "make e2e SUITE=compat", "the command, as the results name it")
	renderFrom := flag.String("render-from", "", "run nothing: write the results of the run whose logs and "+FactsFile+" are in this directory")
	flag.Parse()
	if *out == "" || (flag.NArg() == 0) == (*renderFrom == "") {
		fmt.Fprintln(os.Stderr, "usage: compat -out FILE [-command CMD] KUBE-JOBSET...\n       compat -out FILE -render-from DIR")
		os.Exit(2)
	}
	if *renderFrom != "" {
		render(*out, *renderFrom)
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	tb, err := testbed.DefaultConfig()
	if err != nil {
		fail(err)
	}
	logDir := filepath.Join(tb.Root, workDir, "logs")
	f := &runFacts{Command: *command, Start: time.Now().UTC(), Platform: runtime.GOOS + "/" + runtime.GOARCH,
		CPUs: runtime.NumCPU(), Go: runtime.Version(), Suites: suites}
	failed := runAll(ctx, f, flag.Args(), logDir)
	render(*out, logDir)
	if failed {
		logf("Some combinations failed: see %s", *out)
		os.Exit(1)
	}
}

// runAll runs each combination of args in turn, writing f into logDir after each, and says
// whether any failed. An interrupted run stops at once, its facts written up to there.
func runAll(ctx context.Context, f *runFacts, args []string, logDir string) (failed bool) {
	for _, arg := range args {
		kube, jobset, ok := splitCombo(arg)
		if !ok {
			fail(fmt.Errorf("%q: want KUBE-JOBSET, as v1.37.2-v0.12.0", arg))
		}
		c := &combo{Kube: kube, JobSet: jobset, Suites: map[string]*suiteResult{}}
		f.Combos = append(f.Combos, c)
		if err := runCombo(ctx, c, logDir); err != nil {
			c.Err = err.Error()
			logf("=== Kubernetes %s, JobSet %s failed: %v", kube, jobset, err)
		}
		for _, s := range c.Suites {
			failed = failed || s.failed()
		}
		failed = failed || c.Err != ""
		f.Seconds = time.Since(f.Start).Seconds()
		if err := writeFacts(logDir, f); err != nil {
			fail(err)
		}
		if ctx.Err() != nil {
			fail(ctx.Err())
		}
	}
	return failed
}

// render writes the results of the run in logDir (its facts and logs) into out.
func render(out, logDir string) {
	f, err := loadRun(logDir)
	if err != nil {
		fail(err)
	}
	if err := writeResults(out, f); err != nil {
		fail(err)
	}
	logf("Results written to %s", out)
}

// runCombo starts a fresh testbed for c, runs every suite on it, and always stops it.
func runCombo(ctx context.Context, c *combo, logDir string) (err error) {
	tb, err := testbed.DefaultConfig()
	if err != nil {
		return err
	}
	tb.WorkDir = filepath.Join(tb.Root, workDir)
	tb.Bins = filepath.Join(tb.Root, "bin", "testbed-"+c.Kube+"-"+c.JobSet)
	if got := tb.JobSetVersion(); got != c.JobSet {
		return fmt.Errorf("%s holds JobSet %q, not %s: run make e2e SUITE=compat", tb.Bins, got, c.JobSet)
	}
	c.Tools = toolVersions(tb.Bins)
	start := time.Now()
	defer func() { c.Seconds = time.Since(start).Seconds() }()
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
		logf("--- %s on Kubernetes %s, JobSet %s: -run '^(%s)$'", s.Name, c.Kube, c.JobSet, s.Run)
		logPath := filepath.Join(logDir, logName(c.Kube, c.JobSet, s.Name))
		c.Ran = append(c.Ran, s.Name)
		res := runSuite(ctx, env, s.Name, s.Run, logPath)
		if res.Failed != "" {
			if c.SuiteErrs == nil {
				c.SuiteErrs = map[string]string{}
			}
			c.SuiteErrs[s.Name] = res.Failed
		}
		c.Suites[s.Name] = res
		logf("--- %s: %s (log: %s)", s.Name, res.cell(nil), logPath)
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
	res.Tests, res.Failed = readEvents(io.TeeReader(stdout, logFile), os.Stderr)
	if err := cmd.Wait(); err != nil && res.Failed == "" && !res.failed() {
		res.Failed = fmt.Sprintf("go test: %v: %s", err, lastLines(stderr.String(), 5))
	}
	return res
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
