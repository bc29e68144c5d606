package resourceclaims_test

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/jobset-addons/jobset-addons/e2e/framework"
)

// TestMayChangeAdmittedWithWarning: a claim the API server does not accept for a reason that may
// change (the namespace's quota on claims) does not refuse the JobSet: it is admitted, with the
// dry run's answer as a Warning. A DeviceClass that does not exist is no reason to refuse
// either; the API server accepts such a claim, so nothing is said (the pods wait for the
// scheduler to find a device).
func TestMayChangeAdmittedWithWarning(t *testing.T) {
	for _, tc := range []struct {
		name        string
		hard        corev1.ResourceList
		templates   string
		wantWarning string // "" for none
	}{
		{name: "quota on the claim count", hard: corev1.ResourceList{"count/resourceclaims.resource.k8s.io": resource.MustParse("0")},
			templates: `[{metadata: {name: a}, ` + sharedData + `}]`, wantWarning: "exceeded quota: q"},
		{name: "DeviceClass that does not exist", templates: `[{metadata: {name: a}, spec: {devices: {requests: [{name: d, exactly: {deviceClassName: not-there}}]}}}]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := framework.NamespacedFeature(tc.name, "admitted, with a Warning", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
				c := framework.Client(t, cfg)
				ns := framework.NamespaceFrom(ctx)
				if tc.hard != nil {
					q := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "q"}, Spec: corev1.ResourceQuotaSpec{Hard: tc.hard}}
					framework.CreateQuota(ctx, t, c, q)
				}
				js := newJobSet(ns, "maychange", rjob("w", 1, 1, tc.templates))
				js.Spec.Suspend = ptr.To(true)
				warnings := framework.CreateWithWarnings(ctx, t, cfg, js)
				framework.ExpectDryRunWarning(t, warnings, "resourceclaims: the ResourceClaim maychange-w-0-a of "+
					"spec.replicatedJobs[0].template.metadata.annotations[resourceclaims.jobset-addons.io/templates][0] was not accepted by a dry run, for a reason that may change", tc.wantWarning)
				return ctx
			})
			testenv.Test(t, f)
		})
	}
}

// TestRefusedAfterAdmission: claims refused for good once the JobSet is admitted (by a policy
// that passes dry runs) are told in one ResourceClaimsRefused Warning, and status shows it.
func TestRefusedAfterAdmission(t *testing.T) {
	label := framework.RefuseLabel
	f := framework.NamespacedFeature("refused after admission", "told once, shown by status", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		c := framework.Client(t, cfg)
		ns := framework.NamespaceFrom(ctx)
		framework.RefuseRealCreates(ctx, t, c, "resource.k8s.io", "resourceclaims", ns, func() client.Object {
			return &resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "probe", Labels: map[string]string{label: ns}},
				Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{Requests: []resourcev1.DeviceRequest{{
					Name: "d", Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: "shared-data-resource"},
				}}}}}
		})
		js := newJobSet(ns, "later", rjob("w", 2, 1, `[{metadata: {name: a, labels: {`+label+`: `+ns+`}}, `+sharedData+`}]`))
		js.Spec.Suspend = ptr.To(true)
		framework.CreateAll(ctx, t, c, js) // admitted: the dry run passes the policy
		framework.ExpectRefusedOnce(ctx, t, cfg, c, js, "ResourceClaimsRefused", "ResourceClaimsFailed", "template a (2, such as later-w-")
		return ctx
	})
	testenv.Test(t, f)
}
