// Package trainer_test runs Kubeflow Trainer (framework.TrainerVersion, its controller manager
// beside JobSet on the testbed, `testbedctl trainer`) with all four add-ons and the gang
// schedulers, and checks TrainJobs whose runtime's JobSet template carries the add-ons'
// annotations: KEP-572 story 2 (the initializers' shared PVC made by volumeclaims, the trainer
// nodes held by the sequencer until both initializers complete, one gang per stage made by
// podgroups), and that Trainer's own spec.podGroupPolicy and podgroups never both make a
// PodGroup for one TrainJob: a runtime that asks for both is refused with the field named, and
// Trainer's podGroupPolicy alone is left to Trainer.
package trainer_test

import (
	"context"
	"fmt"
	"os"
	"testing"

	"sigs.k8s.io/e2e-framework/pkg/env"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/jobset-addons/jobset-addons/e2e/framework"
)

var testenv env.Environment

func TestMain(m *testing.M) {
	tb, err := framework.DefaultConfig()
	if err != nil {
		panic(err)
	}
	log := func(format string, args ...any) { fmt.Fprintf(os.Stderr, "testbed: "+format+"\n", args...) }
	e := framework.NewEnvironment()
	// The gang schedulers first (their CRDs: podgroups and Trainer watch the PodGroup kinds
	// served when they start), then Trainer, then the add-ons.
	e.Setup(func(ctx context.Context, _ *envconf.Config) (context.Context, error) {
		if err := framework.StartGangSchedulers(ctx, tb, log); err != nil {
			return ctx, err
		}
		// The DRA devices of the per-Job claims (TestInitializersWithBarrier).
		if err := framework.PublishDevices(ctx, tb, framework.AllAddonsDeviceClass, 1); err != nil {
			return ctx, err
		}
		return ctx, framework.StartTrainer(ctx, tb, log)
	})
	for _, a := range framework.Addons {
		e = framework.WithAddon(e, a, nil)
	}
	e.Finish(func(ctx context.Context, _ *envconf.Config) (context.Context, error) {
		return ctx, framework.StopTrainer(ctx, tb)
	})
	testenv = e
	os.Exit(testenv.Run(m))
}
