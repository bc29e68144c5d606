// Package upgrade_test replaces the testbed's control plane by a newer Kubernetes's while the
// add-ons' objects are in use: make e2e SUITE=upgrade starts the testbed on Kubernetes 1.37
// (bin/testbed) and replaces kube-apiserver, kube-controller-manager and kube-scheduler by
// 1.38's (TESTBED_UPGRADE_BIN_DIR, bin/testbed-v1.38.0-beta.0) on the same etcd, flags and
// feature gates, as a control-plane upgrade does.
package upgrade_test

import (
	"context"
	"fmt"
	"os"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/env"

	"github.com/jobset-addons/jobset-addons/e2e/framework"
)

const addonName = "podgroups"

var testenv env.Environment

func TestMain(m *testing.M) {
	testenv = framework.WithAddon(framework.NewEnvironment(), addonName, probe)
	os.Exit(testenv.Run(m))
}

// probe passes once the apiserver calls the podgroups webhooks: a dry-run create of a composite
// JobSet comes back with its Job template marked for the Job webhook.
func probe(ctx context.Context, c client.Client) error {
	js := compositeJobSet("default", "probe", "1s")
	if err := c.Create(ctx, js, client.DryRunAll); err != nil {
		return err
	}
	if len(js.Spec.ReplicatedJobs[0].Template.Annotations) == 0 {
		return fmt.Errorf("the JobSet came back with no per-Job mark")
	}
	return nil
}
