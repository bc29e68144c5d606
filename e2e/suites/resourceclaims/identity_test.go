package resourceclaims_test

import (
	"context"
	"testing"
	"time"

	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/jobset-addons/jobset-addons/e2e/framework"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// TestClaimNamesThatCoincide: names are joined with "-", so JobSet a's Job a-w-0 with template
// x-1-gpu and JobSet a-w-0's Job a-w-0-x-1 (ReplicatedJob x) with template gpu both give the
// claim a-w-0-x-1-gpu. The claim is JobSet a's; JobSet a-w-0 is admitted (its first Job's claim
// is free) and told (ResourceClaimNameTaken, naming whose the claim is), and the claim is never
// deleted to be made again for it: it stays the same object, JobSet a's.
func TestClaimNamesThatCoincide(t *testing.T) {
	f := framework.NamespacedFeature("a claim name two JobSets give is one's, told, never deleted for the other", "told; the claim stays", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		c := framework.Client(t, cfg)
		ns := framework.NamespaceFrom(ctx)
		// Pods that run long enough for the claim to be fought over, were it.
		a := newJobSet(ns, "a", rjob("w", 1, 1, `[{metadata: {name: x-1-gpu}, `+sharedData+`}]`).PodAnnotation(framework.DelayAnnotationKey, "20s"))
		framework.CreateAll(ctx, t, c, a)
		waitAllocated(ctx, t, c, ns, a.Name, []string{"a-w-0-x-1-gpu"})
		aw := newJobSet(ns, "a-w-0", rjob("x", 2, 1, `[{metadata: {name: gpu}, `+sharedData+`}]`).PodAnnotation(framework.DelayAnnotationKey, "20s"))
		framework.CreateAll(ctx, t, c, aw)
		waitEvent(ctx, t, c, ns, aw.Name, "ResourceClaimNameTaken", "a-w-0-x-1-gpu (made for JobSet a ")
		var uid types.UID
		for range 20 {
			var claim resourcev1.ResourceClaim
			if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "a-w-0-x-1-gpu"}, &claim); err != nil {
				t.Fatalf("the claim a-w-0-x-1-gpu: %v", err)
			}
			if uid == "" {
				uid = claim.UID
			}
			if claim.UID != uid || !claim.DeletionTimestamp.IsZero() || claim.Labels[contract.JobSetNameLabelKey] != "a" {
				t.Fatalf("JobSet a's claim a-w-0-x-1-gpu was deleted or replaced (uid %s, then %s, deleted %v, jobset-name %q)",
					uid, claim.UID, claim.DeletionTimestamp, claim.Labels[contract.JobSetNameLabelKey])
			}
			time.Sleep(250 * time.Millisecond)
		}
		return ctx
	})
	testenv.Test(t, f)
}
