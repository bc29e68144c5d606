// Package kueue_test runs all four add-ons beside real Kueue v0.19.2 (make kueue-bins: the
// kueue binary of the wrapper module tools/kueue, its CRDs and webhooks from its module; v0.17.0
// with NEIGHBOURS=old, tools/kueue-v0.17.0), its DRA integration as it ships, the
// real JobSet controller and the real gang schedulers, on the testbed. Kueue manages only the
// JobSets that name a LocalQueue (manageJobsWithoutQueueName false), so each test makes its own
// ResourceFlavor, ClusterQueue and LocalQueue.
//
//   - TestQueueing: two JobSets that use all four add-ons, in a ClusterQueue that fits one at a
//     time: the second waits suspended, holding what docs/install.md says, and runs correctly
//     after the first. make e2e runs it (the reduced set); make e2e SUITE=kueue runs the others
//     too.
//   - TestDeviceQuota: a ClusterQueue with a device quota (Kueue's deviceClassMappings) for two
//     Jobs' claims and three JobSets whose Jobs get their devices through resourceclaims: what
//     Kueue counts (nothing), the Warning that says so, and where the third waits (the scheduler).
//     make e2e runs it too.
//   - TestPreemption: a higher-priority workload preempts one that uses all four add-ons.
//   - TestTopologyAwareScheduling: Kueue's topology gate and the sequencer's gate on the same pods.
//   - TestGangs: Kueue admits, the gang scheduler (coscheduling, kube-scheduler's Workload API)
//     binds: no deadlock, one gang per gang.
//   - TestWaitForPodsReady: Kueue restarted with a 20 s waitForPodsReady.timeout evicts a JobSet
//     whose first stage works longer than that, the sequencer's gate holding its second; what
//     works (a first stage shorter than the timeout, wait-for Ready), and the Warning.
package kueue_test

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/env"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	"github.com/jobset-addons/jobset-addons/e2e/framework"
)

var (
	testenv env.Environment
	tb      framework.Config

	mu sync.Mutex
	// namespaces the features made: the suite waits until they are gone before it stops Kueue,
	// whose finalizers their Workloads carry.
	namespaces []string
)

func logf(format string, args ...any) { fmt.Fprintf(os.Stderr, "testbed: "+format+"\n", args...) }

func TestMain(m *testing.M) {
	var err error
	if tb, err = framework.DefaultConfig(); err != nil {
		panic(err)
	}
	e := framework.NewEnvironment()
	e.Setup(func(ctx context.Context, cfg *envconf.Config) (context.Context, error) {
		if framework.Installed() {
			return ctx, fmt.Errorf("the Kueue suite runs on the testbed only (it starts Kueue there): unset E2E_ADDONS")
		}
		// The gang schedulers' CRDs before podgroups starts; Kueue before the add-ons, as a
		// cluster would have it (the order does not matter to either).
		if err := framework.StartGangSchedulers(ctx, tb, logf); err != nil {
			return ctx, err
		}
		if err := framework.StartKueue(ctx, tb, suiteKueue(), logf); err != nil {
			return ctx, err
		}
		return ctx, publishDevices(ctx, cfg)
	})
	// Registered before the add-ons' Finish steps, so it runs first: the tests' namespaces go
	// while Kueue and the add-ons still run.
	e.Finish(func(ctx context.Context, cfg *envconf.Config) (context.Context, error) {
		if _, err := os.Stat(cfg.KubeconfigFile()); err != nil {
			return ctx, nil // the testbed is gone already
		}
		if err := deleteNamespaces(ctx, cfg); err != nil {
			return ctx, err
		}
		if err := unpublishDevices(ctx, cfg); err != nil {
			return ctx, err
		}
		return ctx, framework.StopKueue(ctx, tb)
	})
	for _, name := range framework.Addons {
		e = framework.WithAddon(e, name, nil, "--log-level=2")
	}
	testenv = e
	os.Exit(testenv.Run(m))
}

// feature is a feature of one assessment, in a namespace of its own.
func feature(name, assessment string, fn features.Func) features.Feature {
	return features.New(name).
		WithSetup("namespace", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			ctx = framework.Namespace(ctx, t, cfg)
			mu.Lock()
			namespaces = append(namespaces, framework.NamespaceFrom(ctx))
			mu.Unlock()
			return ctx
		}).
		Assess(assessment, fn).
		Teardown(framework.DeleteNamespace).
		Feature()
}

// deleteNamespaces deletes the features' namespaces and waits until they are gone.
func deleteNamespaces(ctx context.Context, cfg *envconf.Config) error {
	c, err := client.New(cfg.Client().RESTConfig(), client.Options{Scheme: framework.Scheme})
	if err != nil {
		return err
	}
	mu.Lock()
	defer mu.Unlock()
	for _, ns := range namespaces {
		if err := client.IgnoreNotFound(c.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})); err != nil {
			return err
		}
	}
	var left []string
	err = wait.PollUntilContextTimeout(ctx, time.Second, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		left = left[:0]
		for _, ns := range namespaces {
			if err := c.Get(ctx, client.ObjectKey{Name: ns}, &corev1.Namespace{}); !apierrors.IsNotFound(err) {
				left = append(left, ns)
			}
		}
		return len(left) == 0, nil
	})
	if err != nil {
		return fmt.Errorf("namespaces %v not gone: %w", left, err)
	}
	return nil
}
