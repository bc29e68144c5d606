// Package framework is what every e2e suite shares: the environment (the local testbed, one
// given by KUBECONFIG, or kind), a typed client, and helpers that wait for real cluster state.
package framework

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/env"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	coschedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"
	volcanov1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/jobset-addons/jobset-addons/e2e/testbed"
)

// Scheme holds every type the suites read and write.
var Scheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		panic(err)
	}
	for _, add := range []func(*runtime.Scheme) error{jobsetv1alpha2.AddToScheme, volcanov1beta1.AddToScheme, coschedv1alpha1.AddToScheme} {
		if err := add(s); err != nil {
			panic(err)
		}
	}
	return s
}()

// NewEnvironment returns the suite's environment:
//   - KUBECONFIG set: that cluster, as it is (JobSet must be installed);
//   - otherwise the local testbed, started for the suite and stopped after it (after the suite's
//     own Finish actions), unless it was already running (`make testbed-up`), in which case it
//     is left running.
func NewEnvironment() env.Environment {
	cfg := envconf.New()
	e := env.NewWithConfig(cfg)
	if kc := os.Getenv("KUBECONFIG"); kc != "" {
		cfg.WithKubeconfigFile(kc)
		return e
	}
	tb, err := testbed.DefaultConfig()
	if err != nil {
		panic(err)
	}
	log := func(format string, args ...any) { fmt.Fprintf(os.Stderr, "testbed: "+format+"\n", args...) }
	e.Setup(func(ctx context.Context, cfg *envconf.Config) (context.Context, error) {
		if rc, err := tb.RESTConfig(); err == nil && testbed.Ping(ctx, rc) {
			log("Reusing the running testbed %s", tb.Kubeconfig())
		} else {
			// Registered now, while the suite runs, so that it is the last Finish: after the
			// suite's own (which clean up on the cluster), whatever order TestMain added them in.
			e.Finish(func(ctx context.Context, _ *envconf.Config) (context.Context, error) {
				if os.Getenv("TESTBED_KEEP") != "" {
					return ctx, nil
				}
				return ctx, testbed.Down(ctx, tb, log)
			})
			if err := testbed.Up(ctx, tb, log); err != nil {
				return ctx, err
			}
		}
		cfg.WithKubeconfigFile(tb.Kubeconfig())
		return ctx, nil
	})
	return e
}

// Client returns a controller-runtime client for the environment's cluster.
func Client(t *testing.T, cfg *envconf.Config) client.Client {
	t.Helper()
	rc := rest.CopyConfig(cfg.Client().RESTConfig())
	// Suites poll; client-go's default of 5 requests/s would make them wait on themselves.
	rc.QPS, rc.Burst = 100, 200
	c, err := client.New(rc, client.Options{Scheme: Scheme})
	if err != nil {
		t.Fatalf("creating client: %v", err)
	}
	return c
}

// Eventually polls cond every 100ms until it returns true or timeout passes, and fails the
// test with the last message cond gave.
func Eventually(ctx context.Context, t *testing.T, timeout time.Duration, what string, cond func(ctx context.Context) (bool, string, error)) {
	t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		ok, msg, err := cond(ctx)
		last = msg
		return ok, err
	})
	if err != nil {
		t.Fatalf("%s: not within %s: %v (last seen: %s)", what, timeout, err, last)
	}
}

// RequireKube skips t when the testbed's kube-apiserver (testbed.Config.KubeAtLeast) is older
// than min, saying why the test cannot work there; the compatibility matrix records it as
// "n/a" with that reason.
func RequireKube(t *testing.T, min, why string) {
	t.Helper()
	if !KubeAtLeast(t, min) {
		t.Skipf("n/a on Kubernetes older than %s: %s", min, why)
	}
}

// KubeAtLeast says whether the testbed's kube-apiserver (testbed.Config.KubeAtLeast) is min or
// later: for a test that expects another outcome of an older API server (RequireKube skips one
// that cannot work there).
func KubeAtLeast(t *testing.T, min string) bool {
	t.Helper()
	tb, err := testbed.DefaultConfig()
	if err != nil {
		t.Fatal(err)
	}
	ok, err := tb.KubeAtLeast(min)
	if err != nil {
		t.Fatal(err)
	}
	return ok
}

// SchedulingGroupJobSetSince is the first JobSet whose CRD keeps a pod template's
// spec.schedulingGroup (where podgroups' kubernetes backend names the gang): older ones were
// built before Kubernetes 1.37 and prune it.
const SchedulingGroupJobSetSince = "v0.12.0"

// RequireJobSet skips t when the testbed's JobSet controller (testbed.Config.JobSetVersion) is
// older than min, saying why the test cannot work there. The compatibility matrix (make e2e
// SUITE=compat) records such a test as "n/a" with that reason, never as passed.
func RequireJobSet(t *testing.T, min, why string) {
	t.Helper()
	tb, err := testbed.DefaultConfig()
	if err != nil {
		t.Fatal(err)
	}
	if !tb.JobSetAtLeast(min) {
		t.Skipf("n/a on JobSet %s: %s (needs JobSet %s or later)", tb.JobSetVersion(), why, min)
	}
}
