// Package volumeclaims_test runs the volumeclaims controller on the testbed, with its webhooks
// as the chart registers them, and checks KEP-572's stories, retention, restarts, reuse and
// admission against the real JobSet controller.
package volumeclaims_test

import (
	"context"
	"errors"
	"os"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/env"

	"github.com/jobset-addons/jobset-addons/e2e/framework"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

var testenv env.Environment

func TestMain(m *testing.M) {
	testenv = framework.WithAddon(framework.NewEnvironment(), "volumeclaims", probe, "--log-level=2")
	os.Exit(testenv.Run(m))
}

// probe passes once the apiserver calls the add-on's JobSet webhooks: a dry-run create of a
// JobSet with policies comes back with the admission marker.
func probe(ctx context.Context, c client.Client) error {
	js := newJobSet(corev1.NamespaceDefault, "probe", `[{templates: [{metadata: {name: data}, spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}}]}]`,
		replicatedJob("w", 1, 1, "data"))
	if err := c.Create(ctx, js, client.DryRunAll); err != nil {
		return err
	}
	if js.Annotations[contract.VolumeClaimsAdmittedAnnotationKey] != contract.EnabledValue {
		return errors.New("the JobSet came back without the admission marker")
	}
	return nil
}
