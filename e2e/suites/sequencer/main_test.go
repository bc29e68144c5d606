// Package sequencer_test runs the sequencer controller on the testbed, with its webhooks as the
// chart registers them, and checks the KEP-672 and KEP-572 fan-in stories, Ready mode, a
// three-stage chain, restarts, suspend and resume, a sequencer killed mid-sequence and
// admission against the real JobSet, Job and scheduler controllers.
package sequencer_test

import (
	"context"
	"errors"
	"os"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/env"

	"github.com/jobset-addons/jobset-addons/e2e/framework"
	"github.com/jobset-addons/jobset-addons/pkg/addon/addontest"
)

const addonName = "sequencer"

// addonArgs: a short lease, so that a sequencer killed by a test is followed within seconds.
var addonArgs = []string{"--log-level=2", "--leader-election-lease-duration=4s", "--leader-election-renew-deadline=3s", "--leader-election-retry-period=500ms"}

var testenv env.Environment

func TestMain(m *testing.M) {
	testenv = framework.WithAddon(framework.NewEnvironment(), addonName, probe, addonArgs...)
	os.Exit(testenv.Run(m))
}

// probe passes once the apiserver calls the sequencer's webhooks: a dry-run create of an
// InOrder JobSet comes back with its second ReplicatedJob gated.
func probe(ctx context.Context, c client.Client) error {
	js := addontest.JobSet(corev1.NamespaceDefault, "probe").InOrder().ReplicatedJobs(replicated("a", 1, 1, "1s"), replicated("b", 1, 1, "1s")).Obj()
	if err := c.Create(ctx, js, client.DryRunAll); err != nil {
		return err
	}
	if !hasGate(js.Spec.ReplicatedJobs[1].Template.Spec.Template.Spec.SchedulingGates) {
		return errors.New("the JobSet came back without the scheduling gate")
	}
	return nil
}
