package resourceclaims_test

import (
	"context"
	"testing"

	"sigs.k8s.io/e2e-framework/pkg/envconf"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/e2e/framework"
)

// TestFeatureGateOff: with JobSetResourceClaimTemplates off, the webhooks admit without
// mutating (bad templates too) and the reconciler makes nothing; the JobSet runs as if the
// annotation were not there.
func TestFeatureGateOff(t *testing.T) {
	framework.NeedsLocalAddon(t)
	f := framework.NamespacedFeature("the feature gate off", "admitted, untouched, no claims", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		c := framework.Client(t, cfg)
		ns := framework.NamespaceFrom(ctx)
		tb, err := framework.DefaultConfig()
		if err != nil {
			t.Fatal(err)
		}
		restart := func(args ...string) {
			t.Helper()
			if err := framework.StopAddon(ctx, tb, "resourceclaims"); err != nil {
				t.Fatal(err)
			}
			if err := framework.StartAddon(ctx, tb, "resourceclaims", func(ctx context.Context) error { return probe(ctx, c) }, args...); err != nil {
				t.Fatal(err)
			}
		}
		if err := framework.StopAddon(ctx, tb, "resourceclaims"); err != nil {
			t.Fatal(err)
		}
		if err := framework.StartAddon(ctx, tb, "resourceclaims", nil, "--feature-gates=JobSetResourceClaimTemplates=false", "--log-level=2"); err != nil {
			t.Fatal(err)
		}
		defer restart("--log-level=2")

		bad := newJobSet(ns, "bad", rjob("w", 1, 1, `[{`))
		bad.Spec.Suspend = new(true)
		good := newJobSet(ns, "good", rjob("w", 2, 1, `[{metadata: {name: data}, `+sharedData+`}]`))
		framework.CreateAll(ctx, t, c, bad, good)
		framework.WaitJobSet(ctx, t, c, good, jobsetv1alpha2.JobSetCompleted)
		for _, pod := range podsOf(ctx, t, c, ns, good.Name) {
			if claims, _ := podClaims(&pod); len(claims) > 0 {
				t.Errorf("pod %s got claims %v with the gate off", pod.Name, claims)
			}
		}
		if got := claimsOf(ctx, t, c, ns, good.Name); len(got) > 0 {
			t.Errorf("claims made with the gate off: %v", claimNames(got))
		}
		return ctx
	})
	testenv.Test(t, f)
}
