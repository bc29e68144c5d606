package testbed_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	"github.com/jobset-addons/jobset-addons/e2e/framework"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// tutorialPage is the tutorial, relative to the checkout's root.
const tutorialPage = "docs/tutorial.md"

// TestTutorial runs docs/tutorial.md as a reader would, from its first kubectl command to its
// cleanup, with the four add-ons running: each command of its console blocks, in order (in the
// namespace the page makes, tutorialNamespace), and checks that each prints what the page shows
// (tutorialdoc_test.go says how the page is read and what may vary). So: the files of examples/tutorial/ apply; the
// checkpoint PVCs, the claims, the stages, the gangs, the start barriers and their Events are
// what the page says; the JobSet completes; after it is deleted and created again under the same
// name its PVCs are the same objects; the status the kubectl plugin prints is the page's; and
// what the page says to delete by hand is all that was left. The checks the page cannot show
// (tutorialChecks) run where it says after=NAME.
//
// E2E_UPDATE_GOLDEN=1 writes each command's output into the page instead of comparing, except
// where the page leaves lines out ("...").
func TestTutorial(t *testing.T) {
	tb, err := framework.DefaultConfig()
	if err != nil {
		t.Fatal(err)
	}
	f := features.New("docs/tutorial.md, run as written").
		WithSetup("the four add-ons", startAddons(tb)).
		Assess("each command prints what the page shows", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			if framework.Installed() {
				t.Skip("E2E_ADDONS=installed: the tutorial's devices are the testbed's fakes (examples/tutorial/1-devices.yaml); it runs on the testbed (make e2e)")
			}
			runTutorial(ctx, t, cfg)
			return ctx
		}).
		Teardown(stopAddons(tb)).
		Teardown(tutorialLeftovers).
		Feature()
	testenv.Test(t, f)
}

// tutorialNamespace is the namespace the page makes and deletes.
const tutorialNamespace = "tutorial"

// tutorialLeftovers deletes what the page makes, should a failed run have left it: the
// namespace and the fake devices.
func tutorialLeftovers(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
	root, err := framework.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	c := framework.Client(t, cfg)
	objs := append(framework.Objects(t, filepath.Join(root, "examples", "tutorial", "1-devices.yaml")),
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: tutorialNamespace}})
	for _, o := range objs {
		if err := c.Delete(ctx, o); client.IgnoreNotFound(err) != nil {
			t.Errorf("deleting %T %s: %v", o, o.GetName(), err)
		}
	}
	return ctx
}

func runTutorial(ctx context.Context, t *testing.T, cfg *envconf.Config) {
	root, err := framework.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	page := filepath.Join(root, tutorialPage)
	doc, err := readTutorial(page)
	if err != nil {
		t.Fatal(err)
	}
	update := os.Getenv("E2E_UPDATE_GOLDEN") == "1"
	files := shownFiles(t, root, doc, update)
	sh := tutorialShell(t, cfg, root)
	c := framework.Client(t, cfg)
	got := map[int][]string{}
	for _, s := range doc.steps {
		got[s.line] = runStep(ctx, t, sh, s, update)
		if s.after != "" {
			check, ok := tutorialChecks[s.after]
			if !ok {
				t.Fatalf("%s:%d: no check %q", tutorialPage, s.line, s.after)
			}
			check(ctx, t, c, tutorialNamespace)
		}
	}
	if update {
		if err := updatePage(page, doc, got, files); err != nil {
			t.Fatal(err)
		}
		t.Logf("E2E_UPDATE_GOLDEN=1: wrote the outputs of this run into %s", tutorialPage)
	}
}

// shownFiles reads the files the page shows, by path, and checks that it shows them as they are.
func shownFiles(t *testing.T, root string, doc *tutorialPageOf, update bool) map[string][]string {
	files := map[string][]string{}
	for _, fb := range doc.files {
		data, err := os.ReadFile(filepath.Join(root, fb.path))
		if err != nil {
			t.Fatalf("%s:%d: %v", tutorialPage, fb.line, err)
		}
		files[fb.path] = strings.Split(strings.TrimRight(string(data), "\n"), "\n")
		if !update && strings.Join(fb.shown, "\n") != strings.Join(files[fb.path], "\n") {
			t.Errorf("%s:%d: the page does not show %s as it is (E2E_UPDATE_GOLDEN=1 copies it)", tutorialPage, fb.line, fb.path)
		}
	}
	return files
}

// runStep runs the step's command (again, for a minute at most, until it prints what the page
// shows, if the step says retry) and fails the test if it does not print it; with update, it
// runs it once and checks nothing. It returns what the command printed.
func runStep(ctx context.Context, t *testing.T, sh func(context.Context, tutorialStep) []string, s tutorialStep, update bool) []string {
	deadline := time.Now()
	if s.retry {
		deadline = deadline.Add(time.Minute)
	}
	for {
		out := sh(ctx, s)
		if update || outputMatches(s, out) {
			return out
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s:%d: $ %s\nprinted:\n%s\nthe page shows:\n%s", tutorialPage, s.line, s.cmd,
				strings.Join(out, "\n"), strings.Join(s.want, "\n"))
		}
		time.Sleep(time.Second)
	}
}

// tutorialShell returns what runs one step: bash in a directory of its own that holds
// examples/ (a link to the checkout's), with kubectl (bin/testbed) and the kubectl plugin (bin)
// first on PATH and a kubeconfig of its own (the page sets its namespace), as the page's reader
// has after make demo.
func tutorialShell(t *testing.T, cfg *envconf.Config, root string) func(context.Context, tutorialStep) []string {
	dir := t.TempDir()
	if err := os.Symlink(filepath.Join(root, "examples"), filepath.Join(dir, "examples")); err != nil {
		t.Fatal(err)
	}
	kc, err := clientcmd.LoadFromFile(cfg.KubeconfigFile())
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, kubeconfig); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "KUBECONFIG="+kubeconfig,
		"PATH="+filepath.Join(root, "bin", "testbed")+":"+filepath.Join(root, "bin")+":"+os.Getenv("PATH"))
	return func(ctx context.Context, s tutorialStep) []string {
		t.Helper()
		ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "bash", "-o", "pipefail", "-c", s.cmd)
		cmd.Dir, cmd.Env = dir, env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s:%d: $ %s: %v\n%s", tutorialPage, s.line, s.cmd, err, out)
		}
		return strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	}
}

// tutorialChecks are what the page says but cannot show in a command's output, run after the
// step that names them (<!-- test: after=NAME -->).
var tutorialChecks = map[string]func(ctx context.Context, t *testing.T, c client.Client, ns string){
	// The node Jobs were made only once the model-initializer Job had completed (dependsOn).
	"stage-order": func(ctx context.Context, t *testing.T, c client.Client, ns string) {
		var jobs batchv1.JobList
		if err := c.List(ctx, &jobs, client.InNamespace(ns), client.MatchingLabels{contract.JobSetNameLabelKey: "train"}); err != nil {
			t.Fatal(err)
		}
		var initDone *time.Time
		for _, j := range jobs.Items {
			if j.Labels[contract.ReplicatedJobNameLabelKey] == "model-initializer" && j.Status.CompletionTime != nil {
				initDone = &j.Status.CompletionTime.Time
			}
		}
		if initDone == nil || len(jobs.Items) != 3 {
			t.Fatalf("want 3 Jobs, model-initializer's completed: %d Jobs, model-initializer completed at %v", len(jobs.Items), initDone)
		}
		for _, j := range jobs.Items {
			if j.Labels[contract.ReplicatedJobNameLabelKey] == "node" && j.CreationTimestamp.Time.Before(*initDone) {
				t.Errorf("Job %s made at %s, before model-initializer completed (%s)", j.Name, j.CreationTimestamp, initDone)
			}
		}
	},
}
