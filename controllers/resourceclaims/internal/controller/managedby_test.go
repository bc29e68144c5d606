package controller

import (
	"context"
	"testing"

	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/component-base/featuregate"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/jobset-addons/jobset-addons/controllers/resourceclaims/internal/claims"
	"github.com/jobset-addons/jobset-addons/pkg/addon"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// A JobSet managed elsewhere (MultiKueue's manager cluster) gets no claim made ahead, even read
// whole (the add-on's cache keeps less of it), and nothing is told; the same JobSet managed by
// JobSet's own controller gets its claim.
func TestReconcileManagedElsewhere(t *testing.T) {
	for name, tc := range map[string]struct {
		managedBy  *string
		wantClaims int
	}{
		"MultiKueue":              {managedBy: ptr.To("kueue.x-k8s.io/multikueue")},
		"another controller":      {managedBy: ptr.To("example.com/runner")},
		"JobSet's own controller": {managedBy: ptr.To(contract.JobSetControllerManagedBy), wantClaims: 1},
	} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			js := devJobSet(1).ManagedBy(*tc.managedBy).Obj()
			c := cacheBuilder(testScheme(t)).WithObjects(js).Build()
			gates := featuregate.NewFeatureGate()
			if err := gates.Add(claims.Gates); err != nil {
				t.Fatal(err)
			}
			rec := events.NewFakeRecorder(10)
			r := &Reconciler{Client: c, APIReader: c, Adopter: c, Recorder: rec, Gates: gates, Workers: 1, changed: addon.NewChanged()}
			if _, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "js"}}); err != nil {
				t.Fatal(err)
			}
			var list resourcev1.ResourceClaimList
			if err := c.List(ctx, &list); err != nil {
				t.Fatal(err)
			}
			if len(list.Items) != tc.wantClaims || (len(rec.Events) > 0) != (tc.wantClaims > 0) {
				t.Errorf("%d claims, %d events; want %d claims, and events only with them", len(list.Items), len(rec.Events), tc.wantClaims)
			}
		})
	}
}
