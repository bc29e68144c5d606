package main

import (
	"os"
	"slices"
	"strings"
	"testing"
)

// TestSecurityDocTable: the permissions table of docs/security.md says exactly what the
// allowlist (which chart-verify holds the rendered RBAC to) grants each controller.
func TestSecurityDocTable(t *testing.T) {
	data, err := os.ReadFile("../../../docs/security.md")
	if err != nil {
		t.Fatal(err)
	}
	documented := docPermissions(t, string(data))
	for _, name := range controllers {
		got := map[string]bool{}
		for _, p := range documented[name] {
			got[p] = true
		}
		want := map[string]bool{}
		for _, p := range allowlist[name] {
			want[p] = true
		}
		if diff := permDiff(got, want); len(diff) > 0 {
			t.Errorf("%s: docs/security.md's table and the allowlist differ (+ in the table only; - in the allowlist only):\n  %s", name, strings.Join(diff, "\n  "))
		}
	}
}

// docPermissions expands the rows of the table whose header is "| add-on | scope | API group |
// resources | verbs | names |" into allowlist lines, by controller.
func docPermissions(t *testing.T, doc string) map[string][]string {
	t.Helper()
	const header = "| add-on | scope | API group | resources | verbs | names |"
	_, rest, ok := strings.Cut(doc, header+"\n")
	if !ok {
		t.Fatalf("docs/security.md has no table %q", header)
	}
	out := map[string][]string{}
	list := func(cell string) []string {
		var items []string
		for item := range strings.SplitSeq(cell, ",") {
			items = append(items, strings.TrimSpace(item))
		}
		return items
	}
	for i, line := range strings.Split(rest, "\n") {
		if i == 0 {
			continue // the separator
		}
		if !strings.HasPrefix(line, "|") {
			break
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		if len(cells) != 6 {
			t.Fatalf("row %q: want 6 cells", line)
		}
		for k := range cells {
			cells[k] = strings.ReplaceAll(strings.TrimSpace(cells[k]), "`", "")
		}
		addons := []string{cells[0]}
		if cells[0] == "every" {
			addons = controllers
		} else if !slices.Contains(controllers, cells[0]) {
			t.Fatalf("row %q: unknown add-on %q", line, cells[0])
		}
		scope := map[string]string{"cluster": "cluster", "release namespace": "{ns}"}[cells[1]]
		if scope == "" {
			t.Fatalf("row %q: scope %q is neither cluster nor release namespace", line, cells[1])
		}
		for _, name := range addons {
			for _, group := range list(cells[2]) {
				if group == "core" {
					group = ""
				}
				for _, res := range list(cells[3]) {
					for _, verb := range list(cells[4]) {
						p := scope + " " + group + "/" + res + " " + verb
						if cells[5] != "" {
							p += " " + strings.ReplaceAll(cells[5], "<name>", name)
						}
						out[name] = append(out[name], p)
					}
				}
			}
		}
	}
	return out
}
