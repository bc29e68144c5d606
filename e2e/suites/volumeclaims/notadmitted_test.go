package volumeclaims_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/jobset-addons/jobset-addons/e2e/framework"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// TestNotAdmitted: a JobSet with policies that was created while the mutating webhook was not
// registered gets a NotAdmitted warning and no PVCs.
func TestNotAdmitted(t *testing.T) {
	testenv.Test(t, framework.NamespacedFeature("a JobSet admitted without the webhook gets a warning and nothing else", "NotAdmitted, no PVCs",
		func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			c := framework.Client(t, cfg)
			var hooks admissionv1.MutatingWebhookConfiguration
			if err := c.Get(ctx, client.ObjectKey{Name: "jobset-addons-volumeclaims"}, &hooks); err != nil {
				t.Fatal(err)
			}
			saved := hooks.DeepCopy()
			saved.ResourceVersion, saved.UID = "", ""
			if err := c.Delete(ctx, &hooks); err != nil {
				t.Fatal(err)
			}
			restore := func() {
				if err := c.Create(context.Background(), saved.DeepCopy()); client.IgnoreAlreadyExists(err) != nil {
					t.Errorf("restoring the webhook configuration: %v", err)
				}
			}
			defer restore()
			js := newJobSet(framework.NamespaceFrom(ctx), "unseen", policiesWith("{}"), replicatedJob("w", 2, 2, "data", "ckpt"))
			// The apiserver drops the configuration from its webhook cache shortly after the delete.
			framework.Eventually(ctx, t, 30*time.Second, "a JobSet created without the mutating webhook", func(ctx context.Context) (bool, string, error) {
				try := js.DeepCopy()
				if err := c.Create(ctx, try); err != nil {
					return false, err.Error(), nil
				}
				if try.Annotations[contract.VolumeClaimsAdmittedAnnotationKey] == "" {
					js = try
					return true, "", nil
				}
				_ = c.Delete(ctx, try)
				framework.Eventually(ctx, t, 30*time.Second, "probe JobSet gone", func(ctx context.Context) (bool, string, error) {
					err := c.Get(ctx, client.ObjectKeyFromObject(try), try)
					return client.IgnoreNotFound(err) == nil && err != nil, fmt.Sprint(err), nil
				})
				return false, "the webhook still ran", nil
			})
			restore()
			framework.Eventually(ctx, t, 30*time.Second, "NotAdmitted event", func(ctx context.Context) (bool, string, error) {
				reasons, err := framework.EventReasons(ctx, c, js)
				return err == nil && reasons["NotAdmitted"] > 0, fmt.Sprint(reasons, err), nil
			})
			expectClaimsStay(ctx, t, c, js.Namespace, js.Name, nil)
			got, err := claims(ctx, c, js.Namespace, js.Name)
			if err != nil || len(got) > 0 {
				t.Errorf("PVCs for a JobSet that was not admitted: %v %v", keys(got), err)
			}
			return ctx
		}))
}
