// Package chaos_test runs all four add-ons on the testbed the way a cluster runs their
// Deployments with two replicas each: every replica its own process, one leader per add-on
// elected through its Lease (the default lease settings), every replica serving the webhooks
// behind a Front that stands in for the Service. Beside them run the real gang schedulers
// (Volcano and coscheduling) and DRA devices published for the claims.
//
// TestChaos runs a mix of JobSets while replicas are killed with SIGKILL at random moments and
// then checks the exact end state; TestLeaderFailover measures how long a controller stays
// leaderless once its leader is killed; TestWebhookOutage makes every add-on webhook
// unreachable for a while; TestOneAddonDown stops volumeclaims alone and checks that nothing
// but its own work waits. CI runs reduced sizes; `make e2e SUITE=chaos` runs the full ones
// (CHAOS_*).
package chaos_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"sigs.k8s.io/e2e-framework/pkg/env"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/jobset-addons/jobset-addons/e2e/framework"
)

var (
	testenv env.Environment
	tb      framework.Config
	// replicas of each add-on, by name.
	replicas = map[string]*framework.AddonReplicas{}
	// namespaces the tests made, deleted when the suite finishes.
	namespaces []string
)

// Sizes: CI's defaults, or `make e2e SUITE=chaos`'s through the environment.
var (
	chaosJobSets  = envInt("CHAOS_JOBSETS", 24)
	chaosKills    = envInt("CHAOS_KILLS", 4)
	outageSeconds = envInt("CHAOS_OUTAGE_SECONDS", 20)
)

// newNamespace creates a namespace for one test, deleted when the suite finishes (its retained
// PVCs and claims are the test's evidence until then).
func newNamespace(ctx context.Context, t *testing.T, c client.Client, prefix string) string {
	ns := prefix + "-" + strconv.FormatInt(time.Now().Unix()%100000, 10)
	framework.CreateAll(ctx, t, c, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	namespaces = append(namespaces, ns)
	return ns
}

// deleteNamespaces deletes the tests' namespaces and waits until they are gone, so that the
// suites after this one start on a quiet testbed.
func deleteNamespaces(ctx context.Context, cfg *envconf.Config) error {
	c, err := client.New(cfg.Client().RESTConfig(), client.Options{Scheme: framework.Scheme})
	if err != nil {
		return err
	}
	for _, ns := range namespaces {
		if err := client.IgnoreNotFound(c.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})); err != nil {
			return err
		}
	}
	return wait.PollUntilContextTimeout(ctx, time.Second, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
		for _, ns := range namespaces {
			if err := c.Get(ctx, client.ObjectKey{Name: ns}, &corev1.Namespace{}); !apierrors.IsNotFound(err) {
				return false, nil
			}
		}
		return true, nil
	})
}

func envInt(key string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(key)); err == nil && v > 0 {
		return v
	}
	return def
}

func TestMain(m *testing.M) {
	var err error
	if tb, err = framework.DefaultConfig(); err != nil {
		panic(err)
	}
	e := framework.NewEnvironment()
	e.Setup(func(ctx context.Context, cfg *envconf.Config) (context.Context, error) {
		if err := framework.StartGangSchedulers(ctx, tb, func(format string, args ...any) {
			fmt.Fprintf(os.Stderr, "testbed: "+format+"\n", args...)
		}); err != nil {
			return ctx, err
		}
		// More than every claim of the full run holds at once.
		if err := framework.PublishDevices(ctx, tb, deviceClass, 4); err != nil {
			return ctx, err
		}
		for _, name := range framework.Addons {
			r, err := framework.StartAddonReplicas(ctx, tb, name, 2, nil, "--log-level=1")
			if err != nil {
				return ctx, err
			}
			replicas[name] = r
		}
		return ctx, nil
	})
	e.Finish(func(ctx context.Context, cfg *envconf.Config) (context.Context, error) {
		if err := deleteNamespaces(ctx, cfg); err != nil {
			return ctx, err
		}
		for _, r := range replicas {
			if err := r.Stop(ctx); err != nil {
				return ctx, err
			}
		}
		return ctx, nil
	})
	testenv = e
	os.Exit(testenv.Run(m))
}
