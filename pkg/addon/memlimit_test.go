package addon

import (
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"
)

func TestSetMemoryLimit(t *testing.T) {
	dir := t.TempDir()
	write := func(v string) string {
		p := filepath.Join(dir, "memory.max")
		if err := os.WriteFile(p, []byte(v), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	before := debug.SetMemoryLimit(-1)
	defer debug.SetMemoryLimit(before)

	got, err := setMemoryLimit(write("268435456\n"))
	if err != nil || got != 228170137 || debug.SetMemoryLimit(-1) != got {
		t.Errorf("256Mi: set %d (err %v), runtime has %d; want 85%%: 228170137", got, err, debug.SetMemoryLimit(-1))
	}
	for _, v := range []string{"max\n", ""} {
		p := write(v)
		if v == "" {
			p = filepath.Join(dir, "none")
		}
		if got, err := setMemoryLimit(p); err != nil || got != 0 {
			t.Errorf("%q: set %d (err %v), want none", v, got, err)
		}
	}
	if _, err := setMemoryLimit(write("lots")); err == nil {
		t.Error("a bad memory.max: no error")
	}
	t.Setenv("GOMEMLIMIT", "100MiB")
	if got, err := setMemoryLimit(write("268435456")); err != nil || got != 0 {
		t.Errorf("with GOMEMLIMIT set: set %d (err %v), want none", got, err)
	}
}
