package testbed_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	"github.com/jobset-addons/jobset-addons/e2e/framework"
)

// TestControllerBinaries runs each controller binary that `make build` made against the
// cluster: it must elect itself leader, serve /healthz, /readyz and /metrics, and on SIGTERM
// release its lease and exit 0.
func TestControllerBinaries(t *testing.T) {
	root, err := framework.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	fb := features.New("each controller binary starts, elects a leader, serves health and metrics, and stops cleanly")
	for _, name := range []string{"volumeclaims", "resourceclaims", "sequencer", "podgroups"} {
		fb = fb.Assess(name, func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			runControllerBinary(ctx, t, cfg, filepath.Join(root, "bin", name), name)
			return ctx
		})
	}
	testenv.Test(t, fb.Feature())
}

func runControllerBinary(ctx context.Context, t *testing.T, cfg *envconf.Config, bin, name string) {
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("%s: run `make build` first: %v", bin, err)
	}
	c := framework.Client(t, cfg)
	health, metrics := freePort(t), freePort(t)
	leaseName := name + ".jobset-addons.io"
	var out bytes.Buffer
	// A serving certificate of its own (external mode): the binary must not touch the webhook
	// configurations or certificate Secret of an add-on another suite runs meanwhile.
	certDir := t.TempDir()
	if _, err := framework.ServingCert(certDir); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin,
		"--kubeconfig", cfg.KubeconfigFile(),
		"--leader-election-namespace", "default",
		"--health-probe-bind-address", fmt.Sprintf("127.0.0.1:%d", health),
		"--metrics-bind-address", fmt.Sprintf("127.0.0.1:%d", metrics),
		"--cert-mode", "external", "--cert-dir", certDir,
		"--webhook-host", "127.0.0.1", fmt.Sprintf("--webhook-port=%d", freePort(t)),
	)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	defer func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("%s output:\n%s", name, out.String())
		}
	}()

	start := time.Now()
	framework.Eventually(ctx, t, 30*time.Second, name+" ready", func(ctx context.Context) (bool, string, error) {
		code, body := get(ctx, fmt.Sprintf("http://127.0.0.1:%d/readyz", health))
		return code == http.StatusOK, body, nil
	})
	ready := time.Since(start)
	if code, body := get(ctx, fmt.Sprintf("http://127.0.0.1:%d/healthz", health)); code != http.StatusOK {
		t.Errorf("/healthz = %d %s", code, body)
	}
	var lease coordinationv1.Lease
	framework.Eventually(ctx, t, 30*time.Second, name+" leader", func(ctx context.Context) (bool, string, error) {
		if err := c.Get(ctx, client.ObjectKey{Namespace: "default", Name: leaseName}, &lease); err != nil {
			return false, err.Error(), nil
		}
		return lease.Spec.HolderIdentity != nil && *lease.Spec.HolderIdentity != "", fmt.Sprintf("%+v", lease.Spec), nil
	})
	framework.Eventually(ctx, t, 10*time.Second, name+" metrics", func(ctx context.Context) (bool, string, error) {
		code, body := get(ctx, fmt.Sprintf("http://127.0.0.1:%d/metrics", metrics))
		want := fmt.Sprintf(`leader_election_master_status{name="%s"} 1`, leaseName)
		return code == http.StatusOK && strings.Contains(body, want), fmt.Sprintf("%d, %q not in /metrics", code, want), nil
	})

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("%s exited with %v after SIGTERM, want 0", name, err)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("%s did not exit within 20s of SIGTERM", name)
	}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "default", Name: leaseName}, &lease); err != nil {
		t.Fatal(err)
	}
	if h := lease.Spec.HolderIdentity; h != nil && *h != "" {
		t.Errorf("lease %s still held by %q after shutdown, want released", leaseName, *h)
	}
	t.Logf("%s: ready in %s, leader, metrics served, exited 0 on SIGTERM and released its lease", name, ready.Round(time.Millisecond))
}

func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func get(ctx context.Context, url string) (int, string) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
