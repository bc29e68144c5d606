// Package observability_test proves the add-ons' metrics, the chart's dashboard and its alerts
// with real parts: the four add-ons run on the testbed, a real Prometheus (bin/prometheus-<version>,
// make prometheus-bins) scrapes them every 2 s while JobSets that use every add-on run, wait and
// finish, and evaluates the chart's alert rules (charts/jobset-addons/files/alerts.yaml, with
// their "for" and age thresholds cut to seconds).
//
//   - TestObservability (make e2e and make e2e SUITE=observability): promtool checks and unit-tests
//     the rules; every dashboard query and every alert's expression (without its threshold)
//     returns series through Prometheus' HTTP API, and the metrics say what the JobSets did;
//     promtool check metrics passes on each add-on's /metrics; one add-on stopped makes
//     JobSetAddonDown fire in Prometheus' /api/v1/alerts.
//   - TestAlertsFireOnWorkload (make e2e SUITE=observability only; make/test.mk
//     OBSERVABILITY_FULL_TESTS): JobSetAddonPVCHeld (a PVC held by finished pods) and
//     JobSetWaitingTooLong (a JobSet waiting on a stage, a start barrier, a gang, a claim) fire,
//     and resolve.
package observability_test

import (
	"context"
	"os"
	"testing"
	"time"

	"sigs.k8s.io/e2e-framework/pkg/env"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/jobset-addons/jobset-addons/e2e/framework"
	"github.com/jobset-addons/jobset-addons/e2e/testbed"
)

var (
	testenv env.Environment
	tb      testbed.Config
	// promURL is the URL of the suite's Prometheus.
	promURL string
)

// scrapeInterval is Prometheus' scrape and rule evaluation interval.
const scrapeInterval = 2 * time.Second

func TestMain(m *testing.M) {
	var err error
	if tb, err = framework.DefaultConfig(); err != nil {
		panic(err)
	}
	e := framework.NewEnvironment()
	e.Setup(func(ctx context.Context, _ *envconf.Config) (context.Context, error) {
		return ctx, framework.PublishDevices(ctx, tb, framework.AllAddonsDeviceClass, 1)
	})
	for _, name := range framework.Addons {
		e = framework.WithAddon(e, name, nil)
	}
	e.Setup(func(ctx context.Context, _ *envconf.Config) (context.Context, error) {
		rules, err := suiteRules()
		if err != nil {
			return ctx, err
		}
		promURL, err = testbed.StartPrometheus(ctx, tb, framework.Addons, rules, scrapeInterval)
		return ctx, err
	}).Finish(func(ctx context.Context, _ *envconf.Config) (context.Context, error) {
		return ctx, testbed.StopPrometheus(tb)
	})
	testenv = e
	os.Exit(testenv.Run(m))
}
