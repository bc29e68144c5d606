package addontest

import (
	"strings"
	"testing"
)

// WantWarning checks the admission Warnings a webhook returned: none when mentions is empty,
// else exactly one that says every one of mentions.
func WantWarning(t testing.TB, warnings []string, mentions ...string) {
	t.Helper()
	if len(mentions) == 0 {
		if len(warnings) != 0 {
			t.Errorf("warnings %q, want none", warnings)
		}
		return
	}
	if len(warnings) != 1 {
		t.Fatalf("warnings %q, want one", warnings)
	}
	for _, m := range mentions {
		if !strings.Contains(warnings[0], m) {
			t.Errorf("warning %q: want it to say %q", warnings[0], m)
		}
	}
}
