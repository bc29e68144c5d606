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
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
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
