package framework

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
)

// CausePaths are the field paths of the causes of an API error (an admission refusal), and
// whether it had any details.
func CausePaths(err error) ([]string, bool) {
	var status apierrors.APIStatus
	if !errors.As(err, &status) || status.Status().Details == nil {
		return nil, false
	}
	var paths []string
	for _, cause := range status.Status().Details.Causes {
		paths = append(paths, cause.Field)
	}
	return paths, true
}

// CreateRefused creates obj, expecting admission to refuse it: it fails the test if obj was
// created (and deletes it) or if the refusal names no field, and returns the field paths of
// its causes and the refusal.
func CreateRefused(ctx context.Context, t *testing.T, c client.Client, obj client.Object) ([]string, error) {
	t.Helper()
	err := c.Create(ctx, obj)
	if err == nil {
		_ = c.Delete(ctx, obj)
		t.Fatalf("%s created; want it refused", obj.GetName())
	}
	paths, ok := CausePaths(err)
	if !ok {
		t.Fatalf("error %v has no field causes", err)
	}
	ExpectCauses(t, obj, err)
	return paths, err
}

// GoldenKube is the oldest Kubernetes whose API server words and places the causes of its own
// validation (of a PVC's, a claim's, a PodGroup's fields, which the webhooks' dry runs pass
// on) as the golden refusals hold them, and as lint finds them (it validates with the project's
// Kubernetes packages, v0.37).
const GoldenKube = "1.37.0"

// ExpectCauses compares the causes of the refusal err of obj, one "field: message" a line,
// sorted, with the calling suite's golden file testdata/refusals/TEST.txt (TEST is the test's
// name), so that every bad input is pinned to its exact paths and messages; obj's namespace
// reads as NAMESPACE there. With E2E_UPDATE_GOLDEN=1 it writes the file instead: review the
// diff. Then lint must refuse obj at the same paths (ExpectLintAgrees). Both in a subtest that
// an API server older than GoldenKube skips, saying why (the compatibility matrix shows it
// n/a); the refusal must have causes on every version.
func ExpectCauses(t *testing.T, obj client.Object, err error) {
	t.Helper()
	var status apierrors.APIStatus
	if !errors.As(err, &status) || status.Status().Details == nil {
		t.Errorf("error %v has no causes", err)
		return
	}
	file := filepath.Join("testdata", "refusals", strings.NewReplacer("/", "__", " ", "_", ":", "_").Replace(t.Name())+".txt")
	t.Run("causes as Kubernetes "+GoldenKube+" words them", func(t *testing.T) {
		RequireKube(t, GoldenKube, "an older API server words or places some causes of its own validation otherwise; the golden refusals and lint hold "+GoldenKube+"'s")
		ExpectLintAgrees(t, obj, err)
		expectGolden(t, file, obj.GetNamespace(), status.Status().Details.Causes)
	})
}

// expectGolden compares causes with the golden file (ExpectCauses), or writes it.
func expectGolden(t *testing.T, file, ns string, causes []metav1.StatusCause) {
	t.Helper()
	var lines []string
	for _, c := range causes {
		line := c.Field + ": " + c.Message
		if ns != "" {
			line = strings.ReplaceAll(line, ns, "NAMESPACE")
		}
		lines = append(lines, line)
	}
	slices.Sort(lines)
	got := strings.Join(lines, "\n") + "\n"
	if os.Getenv("E2E_UPDATE_GOLDEN") == "1" {
		if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(file, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, rerr := os.ReadFile(file)
	if rerr != nil {
		t.Errorf("no golden refusal %s (E2E_UPDATE_GOLDEN=1 writes it): %v\ngot:\n%s", file, rerr, got)
		return
	}
	if string(want) != got {
		t.Errorf("refusal causes differ from %s\nwant:\n%sgot:\n%s", file, want, got)
	}
}

// warnings collects the apiserver's warning headers.
type warnings struct {
	mu   sync.Mutex
	list []string
}

func (w *warnings) HandleWarningHeaderWithContext(_ context.Context, _ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.list = append(w.list, text)
}

// CreateWithWarnings creates obj and returns the warnings its admission answered with (the
// webhooks' admission warnings among them).
func CreateWithWarnings(ctx context.Context, t *testing.T, cfg *envconf.Config, obj client.Object) []string {
	t.Helper()
	w := &warnings{}
	rc := rest.CopyConfig(cfg.Client().RESTConfig())
	rc.WarningHandlerWithContext = w
	c, err := client.New(rc, client.Options{Scheme: Scheme})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, obj); err != nil {
		t.Fatalf("creating %s: %v", obj.GetName(), err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.list)
}

// ExpectRefusedAt creates obj, expecting the webhook named webhook to refuse it with causes at
// exactly wantPaths (in any order).
func ExpectRefusedAt(ctx context.Context, t *testing.T, c client.Client, obj client.Object, webhook string, wantPaths []string) {
	t.Helper()
	paths, err := CreateRefused(ctx, t, c, obj)
	slices.Sort(paths)
	want := slices.Sorted(slices.Values(wantPaths))
	if !slices.Equal(paths, want) {
		t.Errorf("refused at %q, want exactly %q\n(error: %v)", paths, want, err)
	}
	if !strings.Contains(err.Error(), webhook) {
		t.Errorf("not refused by the webhook %s: %v", webhook, err)
	}
}

// ExpectDryRunWarning checks the admission warnings of a create for the add-on's Warning about
// an object of its dry runs (one not accepted for a reason that may change, one accepted
// without a field of its template), the warnings that start with prefix: want "" means none;
// else exactly one, that says want.
func ExpectDryRunWarning(t *testing.T, warnings []string, prefix, want string) {
	t.Helper()
	var ours []string
	for _, w := range warnings {
		if strings.HasPrefix(w, prefix) {
			ours = append(ours, w)
		}
	}
	t.Logf("warnings: %q", warnings)
	switch {
	case want == "" && len(ours) > 0:
		t.Errorf("warned %q, want no dry-run Warning", ours)
	case want != "" && (len(ours) != 1 || !strings.Contains(ours[0], want)):
		t.Errorf("warnings %q, want one that starts %q and says %q", warnings, prefix, want)
	}
}
