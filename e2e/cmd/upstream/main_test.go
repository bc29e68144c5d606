package main

import (
	"slices"
	"testing"
)

// TestPassedAgain: a race that failed and passed when run again alone counts as passed, and
// nothing else of the pass changes.
func TestPassedAgain(t *testing.T) {
	race := races[0].spec
	msg := "ctx " + race + " failed: timed out"
	r := passResult{name: "addons", passed: 2, failed: 2, passedSpecs: []string{"a", "c"},
		failedMsgs:  []string{msg, "ctx b failed: boom"},
		failedSpecs: map[string]string{race: msg, "b": "ctx b failed: boom"}}
	r.passedAgain(race)
	want := []string{"a", "c", race}
	slices.Sort(want)
	if r.passed != 3 || r.failed != 1 || !slices.Equal(r.passedSpecs, want) ||
		!slices.Equal(r.failedMsgs, []string{"ctx b failed: boom"}) || len(r.failedSpecs) != 1 || r.failedSpecs["b"] == "" {
		t.Errorf("after passedAgain: %+v", r)
	}
}
