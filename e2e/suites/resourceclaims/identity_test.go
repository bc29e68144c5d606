package resourceclaims_test

import (
	"context"
	"testing"
	"time"

	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/jobset-addons/jobset-addons/e2e/framework"
)

// TestClaimNamesThatCoincide: names are joined with "-", so Job a-w-0's template 1-gpu and Job
// a-w-0-1's template gpu (ReplicatedJobs w and w-0) both give the claim a-w-0-1-gpu. The claim
// is one Job's; the other Job's claim of that name is told (ResourceClaimNameTaken, naming
// whose it is), and never deleted to be made again for it: the claim stays the same object.
func TestClaimNamesThatCoincide(t *testing.T) {
	f := framework.NamespacedFeature("a claim name two Jobs give is one Job's, told, never deleted for the other", "told; the claim stays", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		c := framework.Client(t, cfg)
		ns := framework.NamespaceFrom(ctx)
		js := newJobSet(ns, "a",
			// Pods that run long enough for the claims to be fought over, were they.
			rjob("w", 1, 1, `[{metadata: {name: 1-gpu}, `+sharedData+`}]`).PodAnnotation(framework.DelayAnnotationKey, "20s"),
			rjob("w-0", 2, 1, `[{metadata: {name: gpu}, `+sharedData+`}]`).PodAnnotation(framework.DelayAnnotationKey, "20s"),
		)
		framework.CreateAll(ctx, t, c, js)
		waitEvent(ctx, t, c, ns, js.Name, "ResourceClaimNameTaken", "a-w-0-1-gpu (made for JobSet a")
		var uid types.UID
		for range 20 {
			var claim resourcev1.ResourceClaim
			if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "a-w-0-1-gpu"}, &claim); err != nil {
				t.Fatalf("the claim a-w-0-1-gpu: %v", err)
			}
			if uid == "" {
				uid = claim.UID
			}
			if claim.UID != uid || !claim.DeletionTimestamp.IsZero() {
				t.Fatalf("the claim a-w-0-1-gpu was deleted (uid %s, then %s, deleted %v): one Job deletes the other's", uid, claim.UID, claim.DeletionTimestamp)
			}
			time.Sleep(250 * time.Millisecond)
		}
		t.Logf("the claim a-w-0-1-gpu stayed %s", uid)
		return ctx
	})
	testenv.Test(t, f)
}
