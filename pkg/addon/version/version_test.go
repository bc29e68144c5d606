package version

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestStampedAtLinkTime builds a program that prints String() with the -X flag make release
// passes (hack/release/ko.yaml), and runs it: the flag must name this very variable.
func TestStampedAtLinkTime(t *testing.T) {
	if got := String(); got != "devel" {
		t.Errorf("String() = %q unstamped, want devel", got)
	}
	dir := t.TempDir()
	main := "package main\n\nimport (\n\t\"fmt\"\n\n\t\"github.com/jobset-addons/jobset-addons/pkg/addon/version\"\n)\n\nfunc main() { fmt.Print(version.String()) }\n"
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(main), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "stamped")
	build := exec.Command("go", "build", "-o", bin, "-ldflags", "-X github.com/jobset-addons/jobset-addons/pkg/addon/version.version=v1.2.3", dir+"/main.go")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin).Output()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(string(out)); got != "v1.2.3" {
		t.Errorf("stamped binary says %q, want v1.2.3", got)
	}
}
