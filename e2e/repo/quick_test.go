package repo_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/jobset-addons/jobset-addons/e2e/repo"
)

// TestQuickTests: every name in make/test.mk's QUICK_TESTS is a test of one of QUICK_SUITES, and
// every one of those suites has a case in it. make e2e-quick runs them with go test -run, which
// runs nothing for a name no suite has, silently: a renamed test would drop out of make test.
func TestQuickTests(t *testing.T) {
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	mk, err := os.ReadFile(filepath.Join(root, "make", "test.mk"))
	if err != nil {
		t.Fatal(err)
	}
	suites := makeList(t, string(mk), "QUICK_SUITES")
	tests := makeList(t, string(mk), "QUICK_TESTS")
	found := map[string]bool{}
	for _, s := range suites {
		files, err := filepath.Glob(filepath.Join(root, "e2e", "suites", s, "*_test.go"))
		if err != nil || len(files) == 0 {
			t.Fatalf("QUICK_SUITES names %s: no e2e/suites/%s/*_test.go (%v)", s, s, err)
		}
		has := false
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			for _, name := range tests {
				if regexp.MustCompile(`(?m)^func ` + name + `\(t \*testing\.T\)`).Match(b) {
					found[name], has = true, true
				}
			}
		}
		if !has {
			t.Errorf("QUICK_SUITES names %s, none of whose tests is in QUICK_TESTS: make test would run nothing of it", s)
		}
	}
	for _, name := range tests {
		if !found[name] {
			t.Errorf("QUICK_TESTS names %s, which no suite of QUICK_SUITES has: rename it there, or drop it", name)
		}
	}
}

// makeList reads `NAME := word word \` (continued over lines) from a makefile.
func makeList(t *testing.T, mk, name string) []string {
	t.Helper()
	m := regexp.MustCompile(`(?m)^` + name + ` := ((?:.*\\\n)*.*)$`).FindStringSubmatch(mk)
	if m == nil {
		t.Fatalf("make/test.mk has no %s := ...", name)
	}
	words := strings.Fields(strings.ReplaceAll(m[1], "\\\n", " "))
	if len(words) == 0 {
		t.Fatalf("make/test.mk's %s is empty", name)
	}
	return words
}
