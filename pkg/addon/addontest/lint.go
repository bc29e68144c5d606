package addontest

import (
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
)

// Corpus are the string values of a Go fuzz corpus directory (testdata/fuzz/<target>, files
// of the form "go test fuzz v1" then string("...")), in file name order.
func Corpus(tb testing.TB, dir string) []string {
	tb.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*"))
	if err != nil || len(files) == 0 {
		tb.Fatalf("no corpus in %s: %v", dir, err)
	}
	sort.Strings(files)
	var out []string
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			tb.Fatal(err)
		}
		lines := strings.SplitN(strings.TrimSpace(string(data)), "\n", 2)
		if len(lines) != 2 || lines[0] != "go test fuzz v1" || !strings.HasPrefix(lines[1], "string(") || !strings.HasSuffix(lines[1], ")") {
			tb.Fatalf("%s: not a corpus file of one string", f)
		}
		v, err := strconv.Unquote(strings.TrimSuffix(strings.TrimPrefix(lines[1], "string("), ")"))
		if err != nil {
			tb.Fatalf("%s: %v", f, err)
		}
		out = append(out, v)
	}
	return out
}

// Causes are the field errors of a webhook's refusal (an Invalid status error), each as
// "field: message", as kubectl jobset-addons lint prints them; nil for no error.
func Causes(tb testing.TB, err error) []string {
	tb.Helper()
	if err == nil {
		return nil
	}
	var status *apierrors.StatusError
	if !errors.As(err, &status) || status.ErrStatus.Details == nil {
		tb.Fatalf("refusal %v is not an Invalid status error", err)
	}
	var out []string
	for _, c := range status.ErrStatus.Details.Causes {
		out = append(out, c.Field+": "+c.Message)
	}
	return out
}

// FieldErrors are errs, each as "field: message" (Causes' form).
func FieldErrors(errs field.ErrorList) []string {
	var out []string
	for _, e := range errs {
		out = append(out, e.Field+": "+e.ErrorBody())
	}
	return out
}

// CorpusCase is the values of one parser's fuzz corpus (Target, a directory of
// pkg/contract/testdata/fuzz) set in a JobSet (Build), and which of them the parser refuses
// (Bad).
type CorpusCase struct {
	Target string
	Build  func(value string) *jobsetv1alpha2.JobSet
	Bad    func(value string) bool
}

// LintAgreesOnCorpora runs LintAgrees on each case's corpus, read from dir (the path of
// pkg/contract/testdata/fuzz), and fails a case none of whose values is refused.
func LintAgreesOnCorpora(t *testing.T, dir string, admit func(*jobsetv1alpha2.JobSet) ([]string, error),
	lint func(*jobsetv1alpha2.JobSet) (field.ErrorList, []string), cases ...CorpusCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.Target, func(t *testing.T) {
			values := Corpus(t, filepath.Join(dir, c.Target))
			if refused := LintAgrees(t, values, c.Build, admit, lint, c.Bad); refused == 0 {
				t.Errorf("none of the %d values was refused", len(values))
			}
		})
	}
}

// LintAgrees checks that kubectl jobset-addons lint (lint: checks.Check) judges the JobSet
// build makes of each value as the webhook does (admit: its mutating then validating webhook on
// CREATE, without dry runs): the same field errors, each "field: message", and the same
// Warnings; and that every value bad says is bad (the annotation's parser refuses it) is
// refused. It returns how many values were refused.
func LintAgrees(t *testing.T, values []string, build func(value string) *jobsetv1alpha2.JobSet,
	admit func(*jobsetv1alpha2.JobSet) ([]string, error), lint func(*jobsetv1alpha2.JobSet) (field.ErrorList, []string), bad func(value string) bool) int {
	t.Helper()
	refused := 0
	for _, v := range values {
		lintErrs, lintWarnings := lint(build(v))
		warnings, err := admit(build(v))
		if diff := cmp.Diff(Causes(t, err), FieldErrors(lintErrs)); diff != "" {
			t.Errorf("value %q: the webhook's refusal (-) and lint's (+) differ:\n%s", v, diff)
		}
		if err == nil {
			if diff := cmp.Diff(warnings, lintWarnings, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("value %q: the webhook's Warnings (-) and lint's (+) differ:\n%s", v, diff)
			}
		}
		if err != nil {
			refused++
		} else if bad(v) {
			t.Errorf("value %q: the parser refuses it, the webhook does not", v)
		}
	}
	return refused
}
