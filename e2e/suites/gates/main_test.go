// Package gates_test runs all four add-ons on the testbed beside JobSet v0.12.0 with every alpha
// gate of JobSet on (repo.JobSetAlphaGates), and proves what each gate changes in a running
// JobSet leaves the add-ons' objects right:
//   - ElasticJobSet (TestElastic): parallelism and completions of running Indexed ReplicatedJobs
//     raised and lowered; per-pod PVCs, gangs, claims and stages follow;
//   - InPlaceRestart (TestInPlaceRestart): pods restarted in place (the agent's part played by
//     the test), one failed pod replaced; PVCs, claims, gang and stage hold;
//   - RestartJob (TestRestartJob): one failed Job re-created alone; its claim, PVCs, stage and
//     gang are right, and nothing of the other Jobs is touched.
//
// make e2e runs these three; make e2e SUITE=gates also runs TestElasticBackends (each backend's
// gang following a scale), TestElasticRetention (removed indexes' PVCs deleted on completion) and
// TestRestartJobRetainedClaim (make/test.mk: JOBSET_GATES_FULL_TESTS).
package gates_test

import (
	"context"
	"os"
	"testing"

	"sigs.k8s.io/e2e-framework/pkg/env"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/jobset-addons/jobset-addons/e2e/framework"
)

// deviceClass is the DeviceClass of the suite's claims: network-attached devices every node
// reaches, published by the suite.
const deviceClass = "gates.e2e.jobset-addons.io"

var testenv env.Environment

func TestMain(m *testing.M) {
	tb, err := framework.DefaultConfig()
	if err != nil {
		panic(err)
	}
	e := framework.NewEnvironment()
	// The gang schedulers' CRDs before podgroups starts (it serves the kinds installed then); the
	// schedulers themselves do not run: the suite checks the PodGroups podgroups writes, and
	// kube-scheduler gang-schedules the kubernetes backend's pods.
	e.Setup(func(ctx context.Context, _ *envconf.Config) (context.Context, error) {
		if framework.Installed() {
			return ctx, nil
		}
		if err := framework.InstallGangCRDs(ctx, tb); err != nil {
			return ctx, err
		}
		return ctx, framework.PublishDevices(ctx, tb, deviceClass, 1)
	})
	for _, name := range framework.Addons {
		e = framework.WithAddon(e, name, nil, "--log-level=2")
	}
	testenv = e
	os.Exit(testenv.Run(m))
}
