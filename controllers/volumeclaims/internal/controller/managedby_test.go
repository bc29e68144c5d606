package controller

import (
	"testing"

	"k8s.io/utils/ptr"

	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// A JobSet managed elsewhere (MultiKueue's manager cluster) gets no PVC, even read whole (the
// add-on's cache keeps less of it), and nothing is told; managed by JobSet's own controller, it
// gets all of them.
func TestReconcileManagedElsewhere(t *testing.T) {
	for name, tc := range map[string]struct {
		managedBy *string
		wantPVCs  int
	}{
		"MultiKueue":              {managedBy: ptr.To("kueue.x-k8s.io/multikueue")},
		"another controller":      {managedBy: ptr.To("example.com/runner")},
		"JobSet's own controller": {managedBy: ptr.To(contract.JobSetControllerManagedBy), wantPVCs: 5},
	} {
		t.Run(name, func(t *testing.T) {
			js := jobSet(true).Obj()
			js.Spec.ManagedBy = tc.managedBy
			pvcs, events := run(t, js)
			if len(pvcs) != tc.wantPVCs || (len(events) > 0) != (tc.wantPVCs > 0) {
				t.Errorf("PVCs %v, events %q; want %d PVCs, and events only with them", pvcs, events, tc.wantPVCs)
			}
		})
	}
}
