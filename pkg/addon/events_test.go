package addon

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestCutNote(t *testing.T) {
	if got := CutNote("short"); got != "short" {
		t.Errorf("CutNote(short) = %q", got)
	}
	for _, note := range []string{strings.Repeat("a", 5000), strings.Repeat("é", 800), strings.Repeat("a", MaxEventNote)} {
		got := CutNote(note)
		if len(got) > MaxEventNote || !utf8.ValidString(got) {
			t.Errorf("CutNote of %d bytes gave %d bytes, valid UTF-8 %v", len(note), len(got), utf8.ValidString(got))
		}
		if len(note) > MaxEventNote && !strings.HasSuffix(got, "...") {
			t.Errorf("a cut note does not end with ...")
		}
	}
}
