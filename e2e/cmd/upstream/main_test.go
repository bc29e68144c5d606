package main

import (
	"slices"
	"testing"
)

// TestRanAlone: a race skipped in the suite's run and then run alone counts as passed, or as
// failed with its message, and nothing else of the pass changes.
func TestRanAlone(t *testing.T) {
	race := races[0].spec
	pass := func() passResult {
		return passResult{name: "addons", total: 5, passed: 2, failed: 1, skipped: 2,
			passedSpecs: []string{"a", "c"}, skippedSpecs: []string{"named skip", race},
			failedMsgs: []string{"ctx b failed: boom"}, failedSpecs: map[string]string{"b": "ctx b failed: boom"}}
	}

	r := pass()
	r.ranAlone(race, "")
	want := []string{"a", "c", race}
	slices.Sort(want)
	if r.passed != 3 || r.failed != 1 || r.skipped != 1 || !slices.Equal(r.passedSpecs, want) ||
		!slices.Equal(r.skippedSpecs, []string{"named skip"}) || !slices.Equal(r.failedMsgs, []string{"ctx b failed: boom"}) ||
		len(r.failedSpecs) != 1 {
		t.Errorf("after ranAlone passed: %+v", r)
	}

	r = pass()
	r.ranAlone(race, "timed out")
	if r.passed != 2 || r.failed != 2 || r.skipped != 1 || !slices.Equal(r.passedSpecs, []string{"a", "c"}) ||
		!slices.Equal(r.failedMsgs, []string{"ctx b failed: boom", "timed out"}) || r.failedSpecs[race] != "timed out" {
		t.Errorf("after ranAlone failed: %+v", r)
	}
}
