package resourceclaims_test

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/jobset-addons/jobset-addons/e2e/framework"
)

// TestPodsRefused: a namespace whose policy refuses pods that use DRA claims, naming them (a
// platform's rule; the API server applies it to each pod the Job controller creates, with the
// claim resourceclaims' Job webhook referenced). The JobSet is admitted and its claims made;
// its Jobs cannot create their pods, and within 30 s resourceclaims says so on the JobSet,
// once, naming the Job, the claim and the policy's message; kubectl jobset-addons status shows
// it.
func TestPodsRefused(t *testing.T) {
	f := framework.NamespacedFeature("pods refused for their claim", "PodsRefused on the JobSet within 30 s", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		c := framework.Client(t, cfg)
		ns := framework.NamespaceFrom(ctx)
		framework.RefusePods(ctx, t, c, ns, "!has(object.spec.resourceClaims) || size(object.spec.resourceClaims) == 0",
			"'no DRA claims in this namespace: ' + object.spec.resourceClaims.map(c, has(c.resourceClaimName) ? c.resourceClaimName : c.name).join(', ')",
			func(spec *corev1.PodSpec) {
				spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "d", ResourceClaimName: ptr.To("probe")}}
			})
		js := newJobSet(ns, "refused", rjob("w", 1, 1, `[{metadata: {name: dev}, `+sharedData+`}]`))
		framework.CreateAll(ctx, t, c, js)
		framework.ExpectPodsRefused(ctx, t, cfg, c, js, "Job refused-w-0", "the ResourceClaim refused-w-0-dev (template dev)",
			"no DRA claims in this namespace: refused-w-0-dev")
		return ctx
	})
	testenv.Test(t, f)
}
