package gates_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/e2e/framework"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// TestElasticRetention (ElasticJobSet, make e2e SUITE=gates): a running JobSet's ReplicatedJob with
// per-pod PVCs and whenComplete: Delete is raised 2→4 and lowered back to 2 while its pods run;
// the PVCs of indexes 2 and 3 are kept while it runs (scale-down is not completion) and deleted
// with the others when it completes.
func TestElasticRetention(t *testing.T) {
	gateTest(t, "ElasticJobSet", "removed indexes' PVCs follow the retention", "kept while running, deleted on completion", func(ctx context.Context, t *testing.T, cfg *envconf.Config, c client.Client, ns string) {
		js := newJobSet(ns, "er", contract.SchedulerCoscheduling, "Complete", []string{"w"}, nil, stage{"w", 1, 2, "12s"})
		for _, k := range []string{contract.SchedulerAnnotationKey, contract.ExecutionPolicyAnnotationKey, contract.WaitForAnnotationKey} {
			delete(js.Annotations, k)
		}
		js.Annotations[contract.PoliciesAnnotationKey] = strings.Replace(js.Annotations[contract.PoliciesAnnotationKey], "whenComplete: Retain", "whenComplete: Delete", 1)
		if err := c.Create(ctx, js); err != nil {
			t.Fatal(err)
		}
		waitPods(ctx, t, c, ns, "er", "w", 2, true)
		if err := scale(ctx, t, c, js, map[string]int32{"w": 4}); err != nil {
			t.Fatal(err)
		}
		waitPods(ctx, t, c, ns, "er", "w", 4, true)
		if err := scale(ctx, t, c, js, map[string]int32{"w": 2}); err != nil {
			t.Fatal(err)
		}
		waitJobSizes(ctx, t, c, ns, map[string]int32{"er-w-0": 2})
		want := []string{"ckpt-er-w-0-0", "ckpt-er-w-0-1", "ckpt-er-w-0-2", "ckpt-er-w-0-3"}
		if got := slices.Sorted(maps.Keys(pvcs(ctx, t, c, ns, "er"))); !slices.Equal(got, want) {
			t.Errorf("PVCs while running after 2→4→2: %v, want %v", got, want)
		}
		framework.WaitJobSet(ctx, t, c, js, jobsetv1alpha2.JobSetCompleted)
		framework.Eventually(ctx, t, time.Minute, "every index's PVC deleted on completion", func(ctx context.Context) (bool, string, error) {
			left := len(pvcs(ctx, t, c, ns, "er"))
			// Deleted PVCs stay Terminating while the finished pods that used them exist: count
			// those not yet deleted.
			notDeleted := notDeletedPVCs(ctx, t, c, ns, "er")
			return len(notDeleted) == 0, fmt.Sprintf("%d listed, not deleted: %v", left, notDeleted), nil
		})
		t.Logf("2→4→2: indexes 2 and 3 kept while running; all four PVCs deleted on completion (whenComplete: Delete)")
	})
}
