package kindbed

import (
	"context"
	"fmt"
	"os"
	"testing"

	e2eenv "sigs.k8s.io/e2e-framework/pkg/env"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
)

// Logf prints a line of the kind harness to stderr.
func Logf(format string, args ...any) { fmt.Fprintf(os.Stderr, "kindbed: "+format+"\n", args...) }

// Environment is an e2e-framework environment whose Setup brings up the kind cluster of
// DefaultConfig (deleted again if it fails to start) and whose Finish deletes it, unless
// E2E_KIND_KEEP is set: what the kind suite and the kind benchmark run in.
func Environment() (e2eenv.Environment, Config, error) {
	kb, err := DefaultConfig()
	if err != nil {
		return nil, kb, err
	}
	testenv := e2eenv.NewWithConfig(envconf.New())
	testenv.Setup(func(ctx context.Context, cfg *envconf.Config) (context.Context, error) {
		if _, err := Up(ctx, kb, Logf); err != nil {
			if os.Getenv("E2E_KIND_KEEP") == "" {
				if derr := Down(ctx, kb, Logf); derr != nil {
					Logf("deleting the cluster after a failed start: %v", derr)
				}
			}
			return ctx, err
		}
		cfg.WithKubeconfigFile(kb.Kubeconfig())
		return ctx, nil
	})
	testenv.Finish(func(ctx context.Context, _ *envconf.Config) (context.Context, error) {
		if os.Getenv("E2E_KIND_KEEP") != "" {
			Logf("E2E_KIND_KEEP is set: cluster %s left running; KUBECONFIG=%s", kb.Name, kb.Kubeconfig())
			return ctx, nil
		}
		return ctx, Down(ctx, kb, Logf)
	})
	return testenv, kb, nil
}

// RunTests runs m's tests in the kind environment and exits with their result; got is given
// the environment and its Config before any test runs. It is the TestMain of every package
// that runs on kind.
func RunTests(m *testing.M, got func(e2eenv.Environment, Config)) {
	testenv, kb, err := Environment()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	got(testenv, kb)
	os.Exit(testenv.Run(m))
}
