package main

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// pair is one combination: a Kubernetes version and a JobSet version.
type pair struct{ kube, jobset string }

// naReason is one distinct n/a message of a run (a skip's reason), under a short key that the
// table's cells name, with where it applies.
type naReason struct {
	key, text string
	uses      []naUse
}

// naUse is where an n/a reason applies in one suite: the cells, each with the same tests n/a.
type naUse struct {
	suite string
	cells []pair
	tests string // the tests, grouped: `TestAdmission` (36 subtests)
}

// naIndex is every n/a reason of a run, keyed a, b, c... in the order the table first shows
// them (row by row, left to right, a cell's reasons sorted).
type naIndex struct {
	reasons []*naReason
	byText  map[string]*naReason
}

// indexNA collects the n/a reasons of the run f.
func indexNA(f *runFacts) *naIndex {
	x := &naIndex{byText: map[string]*naReason{}}
	type use struct{ text, suite, tests string }
	cells := map[use][]pair{}
	var order []use
	for _, c := range f.Combos {
		for _, s := range f.Suites {
			r := c.Suites[s.Name]
			if r == nil {
				continue
			}
			byText := map[string][]string{}
			for _, t := range r.Tests {
				if t.Action == "skip" {
					byText[t.Reason] = append(byText[t.Reason], t.Name)
				}
			}
			for _, text := range slices.Sorted(maps.Keys(byText)) {
				if x.byText[text] == nil {
					x.byText[text] = &naReason{key: key(len(x.reasons)), text: text}
					x.reasons = append(x.reasons, x.byText[text])
				}
				u := use{text, s.Name, testGroups(byText[text])}
				if cells[u] == nil {
					order = append(order, u)
				}
				cells[u] = append(cells[u], pair{c.Kube, c.JobSet})
			}
		}
	}
	for _, u := range order {
		r := x.byText[u.text]
		r.uses = append(r.uses, naUse{u.suite, cells[u], u.tests})
	}
	for _, r := range x.reasons {
		slices.SortStableFunc(r.uses, func(a, b naUse) int {
			return cmp.Compare(suiteIndex(f, a.suite), suiteIndex(f, b.suite))
		})
	}
	return x
}

// keyOf is the key of the n/a reason text.
func (x *naIndex) keyOf(text string) string {
	if r := x.byText[text]; r != nil {
		return r.key
	}
	return "?"
}

// key is the i-th key: a to z, then aa, ab...
func key(i int) string {
	if i < 26 {
		return string(rune('a' + i))
	}
	return key(i/26-1) + key(i%26)
}

// keyLess orders keys as key made them.
func keyLess(a, b string) int {
	return cmp.Or(cmp.Compare(len(a), len(b)), strings.Compare(a, b))
}

func suiteIndex(f *runFacts, name string) int {
	return slices.IndexFunc(f.Suites, func(s suiteSpec) bool { return s.Name == name })
}

// testGroups names the tests n/a, grouped by top-level test: a single test by its name, several
// by the path they share and how many they are (`TestAdmission` (36 subtests)).
func testGroups(names []string) string {
	byTop := map[string][]string{}
	for _, n := range names {
		top, _, _ := strings.Cut(n, "/")
		byTop[top] = append(byTop[top], n)
	}
	var out []string
	for _, top := range slices.Sorted(maps.Keys(byTop)) {
		group := byTop[top]
		if len(group) == 1 {
			out = append(out, "`"+group[0]+"`")
			continue
		}
		out = append(out, fmt.Sprintf("`%s` (%d subtests)", commonPath(group), len(group)))
	}
	return strings.Join(out, ", ")
}

// commonPath is the longest run of leading path elements ("/"-separated) all names share.
func commonPath(names []string) string {
	prefix := strings.Split(names[0], "/")
	for _, n := range names[1:] {
		parts := strings.Split(n, "/")
		i := 0
		for i < len(prefix) && i < len(parts) && prefix[i] == parts[i] {
			i++
		}
		prefix = prefix[:i]
	}
	return strings.Join(prefix, "/")
}

// describeCells names cells by Kubernetes version, those with the same JobSet versions
// together: "Kubernetes v1.34.4, v1.35.4 with JobSet v0.8.0, v0.10.1; v1.37.2 with JobSet v0.8.0".
func describeCells(cells []pair) string {
	var kubes []string
	jobsets := map[string][]string{}
	for _, c := range cells {
		if jobsets[c.kube] == nil {
			kubes = append(kubes, c.kube)
		}
		jobsets[c.kube] = append(jobsets[c.kube], c.jobset)
	}
	var groups [][]string // kubes of the same JobSets, in order
	for _, k := range kubes {
		i := slices.IndexFunc(groups, func(g []string) bool { return slices.Equal(jobsets[g[0]], jobsets[k]) })
		if i < 0 {
			groups = append(groups, []string{k})
		} else {
			groups[i] = append(groups[i], k)
		}
	}
	var out []string
	for _, g := range groups {
		out = append(out, strings.Join(g, ", ")+" with JobSet "+strings.Join(jobsets[g[0]], ", "))
	}
	return "Kubernetes " + strings.Join(out, "; ")
}
