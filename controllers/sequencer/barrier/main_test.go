package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

func TestAgreesWithContract(t *testing.T) {
	if open != contract.StartBarrierOpen || failed != strings.TrimSpace(contract.StartBarrierFailedPrefix) ||
		defaultDeadline != contract.DefaultStartBarrierTimeout+contract.StartBarrierGrace {
		t.Error("the barrier's constants differ from the contract's")
	}
}

func TestWait(t *testing.T) {
	cases := map[string]struct {
		write   string // written after a while; "" writes nothing
		wantErr string // "" = opened
	}{
		"opened":          {write: "open"},
		"opened, newline": {write: "open\n"},
		"failed":          {write: "failed: timed out after 10s: missing pods a-0", wantErr: "start barrier failed: timed out after 10s: missing pods a-0"},
		"nothing said":    {wantErr: "not opened before the deadline"},
		"something else":  {write: "waiting", wantErr: "not opened before the deadline"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "state")
			if err := os.WriteFile(file, nil, 0o644); err != nil { // the kubelet writes an absent annotation as empty
				t.Fatal(err)
			}
			if tc.write != "" {
				go func() {
					time.Sleep(50 * time.Millisecond)
					_ = os.WriteFile(file, []byte(tc.write), 0o644)
				}()
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			err := wait(ctx, file, 10*time.Millisecond)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("wait() = %v, want nil", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("wait() = %v, want an error with %q", err, tc.wantErr)
			}
		})
	}
}

func TestWaitMissingFile(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := wait(ctx, filepath.Join(t.TempDir(), "absent"), 10*time.Millisecond); err == nil {
		t.Error("wait() on a missing file returned nil")
	}
}
