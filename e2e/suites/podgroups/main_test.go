// Package podgroups_test runs the podgroups controller on the testbed beside two real gang
// schedulers (Volcano v1.14.1 and scheduler-plugins' coscheduling v0.34.7, each a second
// scheduler) and the sequencer, with their webhooks as the chart registers them, and checks
// gang scheduling end to end: all of a gang or none of it is bound, one PodGroup per sequenced
// stage created once the stage is released and deleted once it finished, a PodGroup that
// follows a change made while suspended, none left by a finished JobSet, and admission.
package podgroups_test

import (
	"context"
	"fmt"
	"os"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/env"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/jobset-addons/jobset-addons/e2e/framework"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

const addonName = "podgroups"

// addonArgs: a short lease, so that a podgroups killed by a test is followed within seconds.
var addonArgs = []string{"--log-level=2", "--leader-election-lease-duration=4s", "--leader-election-renew-deadline=3s", "--leader-election-retry-period=500ms"}

var testenv env.Environment

func TestMain(m *testing.M) {
	e := framework.NewEnvironment()
	tb, err := framework.DefaultConfig()
	if err != nil {
		panic(err)
	}
	// The schedulers' CRDs first: podgroups watches the PodGroup kinds served when it starts.
	// Installed in a cluster (make e2e-kind), the CRDs are there and these schedulers are not.
	e.Setup(func(ctx context.Context, _ *envconf.Config) (context.Context, error) {
		if framework.Installed() {
			return ctx, nil
		}
		return ctx, framework.StartGangSchedulers(ctx, tb, func(format string, args ...any) {
			fmt.Fprintf(os.Stderr, "testbed: "+format+"\n", args...)
		})
	})
	e = framework.WithAddon(e, "sequencer", nil)
	testenv = framework.WithAddon(e, addonName, probe, addonArgs...)
	os.Exit(testenv.Run(m))
}

// probe passes once the apiserver calls the podgroups webhooks: a dry-run create of a Volcano
// JobSet comes back with its pod template naming the gang.
func probe(ctx context.Context, c client.Client) error {
	js := newJobSet(corev1.NamespaceDefault, "probe", contract.SchedulerVolcano).ReplicatedJobs(replicated("w", 1, 1, "1s")).Obj()
	if err := c.Create(ctx, js, client.DryRunAll); err != nil {
		return err
	}
	if got := js.Spec.ReplicatedJobs[0].Template.Spec.Template.Annotations[contract.VolcanoGroupNameAnnotationKey]; got != "probe" {
		return fmt.Errorf("the JobSet came back with group-name %q", got)
	}
	return nil
}
