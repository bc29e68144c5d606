package repo_test

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/jobset-addons/jobset-addons/e2e/repo"
)

// controllerWritten are the fuzz targets of parsers of annotations only a controller writes:
// lint has nothing to compare for them.
var controllerWritten = []string{"FuzzParseReleased"}

// TestLintCoversTheWebhooks: kubectl jobset-addons lint and explain cover every annotation a user
// writes. Every fuzz corpus of pkg/contract's parsers (pkg/contract/testdata/fuzz/<target>) of
// a user-written annotation is run by some webhook's TestLintAgrees (which compares the
// webhook's refusal with lint's), every controller's webhook package has one, and every key
// docs/reference.md says is written by the user is one that explain knows.
func TestLintCoversTheWebhooks(t *testing.T) {
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	targets, err := os.ReadDir(filepath.Join(root, "pkg", "contract", "testdata", "fuzz"))
	if err != nil || len(targets) == 0 {
		t.Fatalf("no fuzz corpora in pkg/contract/testdata/fuzz: %v", err)
	}
	agreements, _ := filepath.Glob(filepath.Join(root, "controllers", "*", "internal", "webhook", "lint_test.go"))
	webhooks, _ := filepath.Glob(filepath.Join(root, "controllers", "*", "internal", "webhook"))
	if len(agreements) != len(webhooks) || len(webhooks) == 0 {
		t.Errorf("%d controllers' webhook packages, %d of them with lint_test.go (TestLintAgrees)", len(webhooks), len(agreements))
	}
	var tests strings.Builder
	for _, f := range agreements {
		tests.WriteString(read(t, f))
	}
	for _, d := range targets {
		name := d.Name()
		if !strings.Contains(tests.String(), `"`+name+`"`) && !slices.Contains(controllerWritten, name) {
			t.Errorf("the corpus pkg/contract/testdata/fuzz/%s is run by no webhook's TestLintAgrees", name)
		}
	}

	explain := read(t, filepath.Join(root, "cmd", "kubectl-jobset-addons", "explain.go"))
	row := regexp.MustCompile("^\\| `([A-Za-z]+)` \\| `[^`]+` \\| .*[Ww]ritten by the user")
	found := 0
	for _, l := range strings.Split(read(t, filepath.Join(root, "docs", "reference.md")), "\n") {
		m := row.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		found++
		if !strings.Contains(explain, "contract."+m[1]+",") {
			t.Errorf("docs/reference.md: %s is written by the user, and kubectl jobset-addons explain does not know it (cmd/kubectl-jobset-addons/explain.go, annotations)", m[1])
		}
	}
	if found == 0 {
		t.Error("docs/reference.md names no key written by the user")
	}
}

func read(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
