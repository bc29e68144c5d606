package main

import (
	"bytes"
	"context"
	"testing"
)

func TestVersion(t *testing.T) {
	var out bytes.Buffer
	// No kubeconfig is read: --version answers on any machine.
	if err := run(context.Background(), []string{"--version"}, &out); err != nil {
		t.Fatalf("run(--version) = %v", err)
	}
	if got, want := out.String(), "kubectl-jobset_addons devel\n"; got != want {
		t.Errorf("--version printed %q, want %q", got, want)
	}
}
