// Package kind_test runs the add-ons as users run them: a kind cluster of real containers, the
// chart installed from images built here, webhooks reached through their Services, and real
// pods writing to the volumes, reading the devices and waiting behind the gates the add-ons
// make (make e2e-kind). kindbed makes the cluster; it is deleted at the end unless
// E2E_KIND_KEEP=1.
package kind_test

import (
	"context"
	"fmt"
	"os"
	"testing"

	"sigs.k8s.io/e2e-framework/pkg/env"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/jobset-addons/jobset-addons/e2e/kindbed"
)

var (
	testenv env.Environment
	kb      kindbed.Config
)

func logf(format string, args ...any) { fmt.Fprintf(os.Stderr, "kindbed: "+format+"\n", args...) }

func TestMain(m *testing.M) {
	var err error
	kb, err = kindbed.DefaultConfig()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	testenv = env.NewWithConfig(envconf.New())
	testenv.Setup(func(ctx context.Context, cfg *envconf.Config) (context.Context, error) {
		if _, err := kindbed.Up(ctx, kb, logf); err != nil {
			if os.Getenv("E2E_KIND_KEEP") == "" {
				if derr := kindbed.Down(ctx, kb, logf); derr != nil {
					logf("deleting the cluster after a failed start: %v", derr)
				}
			}
			return ctx, err
		}
		cfg.WithKubeconfigFile(kb.Kubeconfig())
		return ctx, nil
	})
	testenv.Finish(func(ctx context.Context, _ *envconf.Config) (context.Context, error) {
		if os.Getenv("E2E_KIND_KEEP") != "" {
			logf("E2E_KIND_KEEP is set: cluster %s left running; KUBECONFIG=%s", kb.Name, kb.Kubeconfig())
			return ctx, nil
		}
		return ctx, kindbed.Down(ctx, kb, logf)
	})
	os.Exit(testenv.Run(m))
}
