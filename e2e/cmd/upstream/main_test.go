package main

import (
	"slices"
	"testing"
)

func TestKnownBareRace(t *testing.T) {
	race := bareRaces[0].spec
	failed := func(name string, specs ...string) passResult {
		r := passResult{name: name, passedSpecs: []string{"a", "b", race}, failedSpecs: map[string]string{}}
		for _, s := range specs {
			r.passedSpecs = slices.DeleteFunc(r.passedSpecs, func(p string) bool { return p == s })
			r.failedSpecs[s] = "ctx " + s + " failed: timed out"
		}
		return r
	}
	for _, tc := range []struct {
		name         string
		addons, bare passResult
		wantKnown    []string // the failures taken as known races
		wantSame     bool     // whether the passes compare equal without them
	}{
		{name: "the race in the bare pass, passed with the add-ons", addons: failed("addons"), bare: failed("bare", race), wantKnown: []string{race}, wantSame: true},
		{name: "the race with the add-ons is ours", addons: failed("addons", race), bare: failed("bare")},
		{name: "in both passes (the add-ons pass fails on its own)", addons: failed("addons", race), bare: failed("bare", race), wantSame: true},
		{name: "another spec in the bare pass", addons: failed("addons"), bare: failed("bare", "a")},
		{name: "nothing failed", addons: failed("addons"), bare: failed("bare"), wantSame: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			results := []passResult{tc.addons, tc.bare}
			var known []string
			for _, r := range results {
				for _, msg := range r.failedSpecs {
					if spec, reason := knownBareRace(r, msg, results); reason != "" {
						known = append(known, spec)
					}
				}
			}
			if !slices.Equal(known, tc.wantKnown) {
				t.Errorf("known races %q, want %q", known, tc.wantKnown)
			}
			if same := slices.Equal(withoutKnown(tc.addons, results), withoutKnown(tc.bare, results)); same != tc.wantSame {
				t.Errorf("passes compare equal: %v, want %v", same, tc.wantSame)
			}
		})
	}
}
