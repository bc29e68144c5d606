package resourceclaims_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/jobset-addons/jobset-addons/e2e/framework"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// TestClaimNamesThatCoincide: names are joined with "-", so JobSet a's Job a-w-0 with template
// x-1-gpu and JobSet a-w-0's Job a-w-0-x-1 (ReplicatedJob x) with template gpu both give the
// claim a-w-0-x-1-gpu. The claim is JobSet a's; JobSet a-w-0 is admitted (its first Job's claim
// is free) and told (ResourceClaimNameTaken, naming whose the claim is), and the claim is never
// deleted to be made again for it: it stays the same object, JobSet a's. Job a-w-0-x-1 is not
// created while the claim is a's (JobSet tells JobCreationFailed, naming the claim), so no pod
// of JobSet a-w-0 ever uses JobSet a's devices. Once JobSet a and its claim are gone, JobSet
// creates the Job within seconds (the add-on writes its retry annotation on the JobSet), not
// after JobSet's back-off: the claim goes just after one of JobSet's retries, once they are
// 8 s apart, so that its next is 16 s away. The Job's pods get a claim of their own.
func TestClaimNamesThatCoincide(t *testing.T) {
	f := framework.NamespacedFeature("a claim name two JobSets give is one's, told, never deleted for the other", "told; the claim stays; the other's Job waits for it to go", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		c := framework.Client(t, cfg)
		ns := framework.NamespaceFrom(ctx)
		const taken = "a-w-0-x-1-gpu"
		// Pods that run long enough for the claim to be fought over, were it, and to hold it
		// until JobSet a is deleted.
		a := newJobSet(ns, "a", rjob("w", 1, 1, `[{metadata: {name: x-1-gpu}, `+sharedData+`}]`).PodAnnotation(framework.DelayAnnotationKey, "300s"))
		framework.CreateAll(ctx, t, c, a)
		waitAllocated(ctx, t, c, ns, a.Name, []string{taken})
		// Job a-w-0-x-0 done well before JobSet a goes: its end reconciles the JobSet.
		aw := newJobSet(ns, "a-w-0", rjob("x", 2, 1, `[{metadata: {name: gpu}, `+sharedData+`}]`).PodAnnotation(framework.DelayAnnotationKey, "5s"))
		var mu sync.Mutex
		var foreign []string
		stop := framework.PollPods(ctx, c, func(pods []corev1.Pod) {
			for i := range pods {
				if claims, _ := podClaims(&pods[i]); claims["gpu"] == taken {
					mu.Lock()
					foreign = append(foreign, pods[i].Name)
					mu.Unlock()
				}
			}
		}, client.InNamespace(ns), client.MatchingLabels{contract.JobSetNameLabelKey: aw.Name})
		defer stop()
		framework.CreateAll(ctx, t, c, aw)
		waitEvent(ctx, t, c, ns, aw.Name, "ResourceClaimNameTaken", taken+" (made for JobSet a ")
		var uid types.UID
		for range 20 {
			var claim resourcev1.ResourceClaim
			if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: taken}, &claim); err != nil {
				t.Fatalf("the claim %s: %v", taken, err)
			}
			if uid == "" {
				uid = claim.UID
			}
			if claim.UID != uid || !claim.DeletionTimestamp.IsZero() || claim.Labels[contract.JobSetNameLabelKey] != "a" {
				t.Fatalf("JobSet a's claim %s was deleted or replaced (uid %s, then %s, deleted %v, jobset-name %q)",
					taken, uid, claim.UID, claim.DeletionTimestamp, claim.Labels[contract.JobSetNameLabelKey])
			}
			if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "a-w-0-x-1"}, &batchv1.Job{}); !apierrors.IsNotFound(err) {
				t.Fatalf("Job a-w-0-x-1 was created while its claim %s is JobSet a's (err %v)", taken, err)
			}
			time.Sleep(250 * time.Millisecond)
		}
		waitEvent(ctx, t, c, ns, aw.Name, "JobCreationFailed", "the ResourceClaim "+taken+" exists and was made for JobSet a ")
		stop()
		if len(foreign) > 0 {
			t.Fatalf("pods %v of JobSet a-w-0 reference JobSet a's claim %s", foreign, taken)
		}
		// JobSet a goes, and its claim with it, just after a retry of JobSet's that came 8 s or
		// more after the one before (each refusal of the Job counts in the add-on's metrics):
		// JobSet's own next retry is then 16 s or more away.
		framework.WaitRetryAfterGap(ctx, t, "a refusal of a Job of JobSet's", 8*time.Second, func() int {
			return framework.AddonCounter(ctx, t, "resourceclaims", "jobset_addons_webhook_refusals_total", `webhook="job"`)
		})
		if err := c.Delete(ctx, a, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil {
			t.Fatal(err)
		}
		framework.Eventually(ctx, t, 60*time.Second, "JobSet a's claim "+taken+" gone", func(ctx context.Context) (bool, string, error) {
			var claim resourcev1.ResourceClaim
			err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: taken}, &claim)
			if apierrors.IsNotFound(err) {
				return true, "", nil
			}
			return err == nil && claim.Labels[contract.JobSetNameLabelKey] != "a", "made for JobSet " + claim.Labels[contract.JobSetNameLabelKey], err
		})
		// JobSet creates the Job within seconds, not at the end of its back-off.
		gone := time.Now()
		framework.Eventually(ctx, t, 5*time.Second, "Job a-w-0-x-1 created within 5 s of the claim's going", func(ctx context.Context) (bool, string, error) {
			err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "a-w-0-x-1"}, &batchv1.Job{})
			return err == nil, fmt.Sprint(err), nil
		})
		t.Logf("Job a-w-0-x-1 created %s after JobSet a's claim was seen gone", time.Since(gone).Round(100*time.Millisecond))
		waitAllocated(ctx, t, c, ns, aw.Name, []string{taken})
		framework.Eventually(ctx, t, 60*time.Second, "a pod of Job a-w-0-x-1 with its own claim", func(ctx context.Context) (bool, string, error) {
			for _, p := range podsOf(ctx, t, c, ns, aw.Name) {
				if claims, _ := podClaims(&p); p.Labels[batchv1.JobNameLabel] == "a-w-0-x-1" && claims["gpu"] == taken {
					return true, "", nil
				}
			}
			return false, "no pod of Job a-w-0-x-1 yet", nil
		})
		return ctx
	})
	testenv.Test(t, f)
}

// TestJobBeforeItsClaim: a Job can come before its claims: the reconciler has not made them
// ahead yet, or cannot (here a quota on the DeviceClass imex.nvidia.com holds back JobSet
// a-w-0's claim a-w-0-x-0-gpu). JobSet a, admitted meanwhile since no claim of the name exists,
// gives the same claim name (Job a-w-0, template x-0-gpu), of a DeviceClass the quota leaves
// free. No pod of JobSet a-w-0 may ever use that claim: the Job webhook makes a Job's missing
// claims itself, ahead of the Job, for its JobSet, or holds the Job back until it can, so the
// first to make the claim holds the name. JobSet a-w-0 is told (ResourceClaimNameTaken) and
// waits; once the quota has room and JobSet a and its claim are gone, it gets its own.
func TestJobBeforeItsClaim(t *testing.T) {
	f := framework.NamespacedFeature("a Job that comes before its claim never gets another JobSet's claim of that name", "the Job waits, then runs with its own claim", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		c := framework.Client(t, cfg)
		ns := framework.NamespaceFrom(ctx)
		const taken = "a-w-0-x-0-gpu"
		quota := corev1.ResourceName("imex.nvidia.com" + corev1.ResourceClaimsPerClass)
		q := framework.Quota(ctx, t, c, ns, "no-imex", quota, "0")
		aw := newJobSet(ns, "a-w-0", rjob("x", 1, 1, `[{metadata: {name: gpu}, spec: {devices: {requests: [{name: d, exactly: {deviceClassName: imex.nvidia.com}}]}}}]`))
		var mu sync.Mutex
		foreign := map[string]bool{}
		stop := framework.PollPods(ctx, c, func(pods []corev1.Pod) {
			for i := range pods {
				if claims, _ := podClaims(&pods[i]); claims["gpu"] == taken {
					var claim resourcev1.ResourceClaim
					if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: taken}, &claim); err == nil && claim.Labels[contract.JobSetNameLabelKey] != aw.Name {
						mu.Lock()
						foreign[pods[i].Name] = true
						mu.Unlock()
					}
				}
			}
		}, client.InNamespace(ns), client.MatchingLabels{contract.JobSetNameLabelKey: aw.Name})
		defer stop()
		framework.CreateAll(ctx, t, c, aw)
		// Its Job comes: created (its pods would then use whatever claim of the name appears),
		// or held back for want of its claim, which the quota holds back.
		framework.Eventually(ctx, t, 30*time.Second, "Job a-w-0-x-0 created, or held back for want of its claim", func(ctx context.Context) (bool, string, error) {
			if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "a-w-0-x-0"}, &batchv1.Job{}); err == nil {
				return true, "", nil
			}
			for _, note := range events(ctx, t, c, ns, aw.Name)["JobCreationFailed"] {
				if strings.Contains(note, taken) {
					return true, "", nil
				}
			}
			return false, "no Job, and no JobCreationFailed Event naming " + taken, nil
		})
		if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: taken}, &resourcev1.ResourceClaim{}); !apierrors.IsNotFound(err) {
			t.Fatalf("claim %s: %v, want none yet: the quota holds it back", taken, err)
		}

		// JobSet a is admitted (no claim of the name exists), and its claim is made.
		a := newJobSet(ns, "a", rjob("w", 1, 1, `[{metadata: {name: x-0-gpu}, `+sharedData+`}]`).PodAnnotation(framework.DelayAnnotationKey, "30s"))
		framework.CreateAll(ctx, t, c, a)
		waitAllocated(ctx, t, c, ns, a.Name, []string{taken})
		time.Sleep(3 * time.Second) // the pods of a-w-0, were any created, are polled meanwhile
		mu.Lock()
		seen := slices.Sorted(maps.Keys(foreign))
		mu.Unlock()
		if len(seen) > 0 {
			t.Fatalf("pods %v of JobSet a-w-0 use JobSet a's claim %s", seen, taken)
		}
		waitEvent(ctx, t, c, ns, aw.Name, "ResourceClaimNameTaken", taken+" (made for JobSet a ")

		// Room in the quota, JobSet a and its claim gone: a-w-0 gets its own claim and runs.
		framework.RaiseQuota(ctx, t, c, q, quota, "10")
		if err := c.Delete(ctx, a, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil {
			t.Fatal(err)
		}
		framework.Eventually(ctx, t, 90*time.Second, "a pod of Job a-w-0-x-0 with its own claim", func(ctx context.Context) (bool, string, error) {
			var claim resourcev1.ResourceClaim
			if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: taken}, &claim); err != nil || claim.Labels[contract.JobSetNameLabelKey] != aw.Name {
				return false, fmt.Sprintf("claim %s: %v, made for JobSet %q", taken, err, claim.Labels[contract.JobSetNameLabelKey]), nil
			}
			for _, p := range podsOf(ctx, t, c, ns, aw.Name) {
				if claims, _ := podClaims(&p); claims["gpu"] == taken {
					return true, "", nil
				}
			}
			return false, "no pod of Job a-w-0-x-0 yet", nil
		})
		stop()
		if len(foreign) > 0 {
			t.Fatalf("pods %v of JobSet a-w-0 use JobSet a's claim %s", slices.Sorted(maps.Keys(foreign)), taken)
		}
		return ctx
	})
	testenv.Test(t, f)
}
