// Package kai_test runs the podgroups controller on the testbed beside KAI Scheduler v0.12.0
// (its scheduler and its binder, without its pod grouper: testbed.StartKAI) and the sequencer,
// and checks gang scheduling through KAI end to end: all of a gang or none of it is bound, a
// PodGroup per sequenced stage, a subGroup per ReplicatedJob so that a ReplicatedJob that cannot
// be placed holds the others back, and a Warning where KAI would skip a PodGroup without a word
// (a queue that does not exist, or has no parent).
package kai_test

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

var testenv env.Environment

func TestMain(m *testing.M) {
	e := framework.NewEnvironment()
	tb, err := framework.DefaultConfig()
	if err != nil {
		panic(err)
	}
	// KAI's CRDs first: podgroups watches the PodGroup kinds served when it starts.
	e.Setup(func(ctx context.Context, _ *envconf.Config) (context.Context, error) {
		return ctx, framework.StartKAI(ctx, tb, framework.KAIOptions{}, func(format string, args ...any) {
			fmt.Fprintf(os.Stderr, "testbed: "+format+"\n", args...)
		})
	})
	e = framework.WithAddon(e, "sequencer", nil)
	testenv = framework.WithAddon(e, "podgroups", probe, "--log-level=2")
	os.Exit(testenv.Run(m))
}

// probe passes once the apiserver calls the podgroups webhooks: a dry-run create of a KAI
// JobSet comes back with its pod template naming the gang, <jobset>.<namespace>.
func probe(ctx context.Context, c client.Client) error {
	js := kaiJobSet(corev1.NamespaceDefault, "probe").ReplicatedJobs(replicated("w", 1, 1, "1s")).Obj()
	if err := c.Create(ctx, js, client.DryRunAll); err != nil {
		return err
	}
	if got := js.Spec.ReplicatedJobs[0].Template.Spec.Template.Annotations[contract.KAIPodGroupAnnotationKey]; got != "probe.default" {
		return fmt.Errorf("the JobSet came back with pod-group-name %q", got)
	}
	return nil
}
