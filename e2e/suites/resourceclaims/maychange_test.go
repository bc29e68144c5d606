package resourceclaims_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
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
					framework.CreateAll(ctx, t, c, q)
					framework.Eventually(ctx, t, 30*time.Second, "quota status", func(ctx context.Context) (bool, string, error) {
						if err := c.Get(ctx, client.ObjectKeyFromObject(q), q); err != nil {
							return false, err.Error(), nil
						}
						return len(q.Status.Hard) > 0, fmt.Sprintf("%+v", q.Status), nil
					})
				}
				js := newJobSet(ns, "maychange", rjob("w", 1, 1, tc.templates))
				js.Spec.Suspend = ptr.To(true)
				warnings := framework.CreateWithWarnings(ctx, t, cfg, js)
				var ours []string
				for _, w := range warnings {
					if strings.HasPrefix(w, "resourceclaims: the ResourceClaim maychange-w-0-a of "+
						"spec.replicatedJobs[0].template.metadata.annotations[resourceclaims.jobset-addons.io/templates][0] was not accepted by a dry run, for a reason that may change") {
						ours = append(ours, w)
					}
				}
				t.Logf("warnings: %q", warnings)
				switch {
				case tc.wantWarning == "" && len(ours) > 0:
					t.Errorf("warned %q, want no dry-run Warning", ours)
				case tc.wantWarning != "" && (len(ours) != 1 || !strings.Contains(ours[0], tc.wantWarning)):
					t.Errorf("warnings %q, want one that says %q", warnings, tc.wantWarning)
				}
				return ctx
			})
			testenv.Test(t, f)
		})
	}
}
