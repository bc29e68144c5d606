package resourceclaims_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	resourcev1 "k8s.io/api/resource/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/e2e/framework"
	"github.com/jobset-addons/jobset-addons/pkg/addon/addontest"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// TestClaimOnPodGroup: a Job of 300 pods shares one per-Job claim, more than a claim reserved
// per pod can serve (256). With podgroups' scheduler kubernetes the claim goes on the Job's
// PodGroup, and kube-scheduler (DRAWorkloadResourceClaims, on in the testbed) reserves it for the
// PodGroup: the claim is allocated once, its reservedFor is the PodGroup alone while the pods
// run, all 300 pods are bound, and the JobSet completes. The same JobSet without the scheduler
// annotation is refused at admission (TestAdmission); where the apiserver drops a PodGroup's
// claims, podgroups refuses it (TestClaimOnPodGroupGateOff).
func TestClaimOnPodGroup(t *testing.T) {
	const pods = 300
	f := framework.NamespacedFeature("a Job of 300 pods shares one claim through its PodGroup", "allocated once, reserved for the PodGroup, all bound", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		c, ns := claimsGate(ctx, t, cfg, true)
		js := bigJobSet(ns, pods)
		// Long enough for every pod to be bound while the first ones still run.
		js.Spec.ReplicatedJobs[0].Template.Spec.Template.Annotations[framework.DelayAnnotationKey] = "40s"
		start := time.Now()
		framework.CreateAll(ctx, t, c, js)

		// The PodGroup lists the Job's claim, as the pods name it.
		wantClaims := []schedulingv1beta1.PodGroupResourceClaim{{Name: "data", ResourceClaimName: ptr.To("big-w-0-data")}}
		pg := &schedulingv1beta1.PodGroup{}
		framework.Eventually(ctx, t, 30*time.Second, "PodGroup big with the Job's claim", func(ctx context.Context) (bool, string, error) {
			if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "big"}, pg); err != nil {
				return false, err.Error(), nil
			}
			return equality.Semantic.DeepEqual(pg.Spec.ResourceClaims, wantClaims), fmt.Sprintf("claims %+v", pg.Spec.ResourceClaims), nil
		})

		// All 300 bound; the claim allocated, reserved for the PodGroup and nothing else.
		var allocation *resourcev1.AllocationResult
		claim := &resourcev1.ResourceClaim{}
		framework.Eventually(ctx, t, 2*time.Minute, fmt.Sprintf("%d pods bound", pods), func(ctx context.Context) (bool, string, error) {
			if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "big-w-0-data"}, claim); err != nil {
				return false, err.Error(), nil
			}
			if allocation == nil && claim.Status.Allocation != nil {
				allocation = claim.Status.Allocation.DeepCopy()
			}
			ps := podsOf(ctx, t, c, ns, js.Name)
			n := 0
			for i := range ps {
				if ps[i].Spec.NodeName != "" {
					n++
				}
			}
			return n == pods, fmt.Sprintf("%d of %d pods bound, claim reservedFor %d entries", n, len(ps), len(claim.Status.ReservedFor)), nil
		})
		t.Logf("%d pods bound %s after the JobSet's creation", pods, time.Since(start).Round(time.Millisecond))
		wantRef := resourcev1.ResourceClaimConsumerReference{APIGroup: schedulingv1beta1.GroupName, Resource: "podgroups", Name: "big", UID: pg.UID}
		if got := claim.Status.ReservedFor; len(got) != 1 || got[0] != wantRef {
			t.Errorf("claim big-w-0-data reservedFor %+v, want the PodGroup alone %+v", got, wantRef)
		}
		if claim.Status.Allocation == nil || !equality.Semantic.DeepEqual(claim.Status.Allocation, allocation) {
			t.Errorf("claim big-w-0-data allocation %+v, want the first one seen %+v throughout", claim.Status.Allocation, allocation)
		}
		for _, p := range podsOf(ctx, t, c, ns, js.Name) {
			refs, _ := podClaims(&p)
			if fmt.Sprint(refs) != fmt.Sprint(map[string]string{"data": "big-w-0-data"}) {
				t.Errorf("pod %s references %v, want data -> big-w-0-data", p.Name, refs)
				break
			}
		}
		var all resourcev1.ResourceClaimList
		if err := c.List(ctx, &all, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		if len(all.Items) != 1 {
			t.Errorf("%d ResourceClaims in the namespace, want the one per-Job claim", len(all.Items))
		}
		framework.WaitJobSet(ctx, t, c, js, jobsetv1alpha2.JobSetCompleted)
		t.Logf("JobSet of %d pods Completed %s after its creation", pods, time.Since(start).Round(time.Millisecond))
		return ctx
	})
	testenv.Test(t, f)
}

// bigJobSet asks for scheduler kubernetes and has one Job of pods pods sharing one per-Job claim.
func bigJobSet(ns string, pods int32) *jobsetv1alpha2.JobSet {
	return addontest.JobSet(ns, "big").Annotation(contract.SchedulerAnnotationKey, string(contract.SchedulerKubernetes)).
		ReplicatedJobs(rjob("w", 1, pods, `[{metadata: {name: data}, `+sharedData+`, containers: [worker]}]`)).Obj()
}

// claimsGate skips the case, as n/a, unless the Workload API is served and the apiserver keeps a
// PodGroup's claims (DRAWorkloadResourceClaims) as on says; it returns the client and namespace.
func claimsGate(ctx context.Context, t *testing.T, cfg *envconf.Config, on bool) (client.Client, string) {
	t.Helper()
	framework.RequireWorkloadAPI(t, cfg)
	c := framework.Client(t, cfg)
	ns := framework.NamespaceFrom(ctx)
	if kept := podGroupClaimsKept(ctx, t, c, ns); kept != on {
		t.Skipf("n/a: this case needs DRAWorkloadResourceClaims on=%t, and this testbed's apiserver keeps a PodGroup's claims=%t", on, kept)
	}
	return c, ns
}

// podGroupClaimsKept tells whether the apiserver keeps a PodGroup's spec.resourceClaims (the
// feature gate DRAWorkloadResourceClaims), by a dry-run create.
func podGroupClaimsKept(ctx context.Context, t *testing.T, c client.Client, ns string) bool {
	t.Helper()
	pg := &schedulingv1beta1.PodGroup{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "claims-probe"},
		Spec: schedulingv1beta1.PodGroupSpec{
			SchedulingPolicy: schedulingv1beta1.PodGroupSchedulingPolicy{Gang: &schedulingv1beta1.GangSchedulingPolicy{MinCount: 1}},
			ResourceClaims:   []schedulingv1beta1.PodGroupResourceClaim{{Name: "probe", ResourceClaimName: ptr.To("probe")}},
		},
	}
	if err := c.Create(ctx, pg, client.DryRunAll); err != nil {
		t.Fatal(err)
	}
	return len(pg.Spec.ResourceClaims) > 0
}

// TestClaimOnPodGroupGateOff: where the apiserver drops a PodGroup's claims (a testbed started
// with TESTBED_KUBE_FEATURE_GATES without DRAWorkloadResourceClaims: make e2e SUITE=gate-off), the
// JobSet of TestClaimOnPodGroup is refused at admission by podgroups, at the templates
// annotation, naming the gate; nothing is made.
func TestClaimOnPodGroupGateOff(t *testing.T) {
	f := framework.NamespacedFeature("a Job of 300 pods sharing a claim, the gate off", "refused at admission", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		c, ns := claimsGate(ctx, t, cfg, false)
		js := bigJobSet(ns, 300)
		err := c.Create(ctx, js)
		if err == nil {
			t.Fatal("admitted")
		}
		framework.ExpectCauses(t, js, err)
		for _, want := range []string{"vjobset.podgroups.jobset-addons.io", "DRAWorkloadResourceClaims", "runs 300 pods at once"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("refusal %q does not say %q", err, want)
			}
		}
		// A Job of 4 is admitted: its PodGroup is made, the apiserver drops the claims, and
		// podgroups says so; the claim is reserved per pod and the JobSet completes.
		small := bigJobSet(ns, 4)
		small.Name = "small"
		framework.CreateAll(ctx, t, c, small)
		waitEvent(ctx, t, c, ns, small.Name, "PodGroupClaimsDropped", "DRAWorkloadResourceClaims")
		pg := &schedulingv1beta1.PodGroup{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "small"}, pg); err != nil || len(pg.Spec.ResourceClaims) > 0 {
			t.Errorf("PodGroup small: %v, claims %+v; want it, without claims", err, pg.Spec.ResourceClaims)
		}
		framework.WaitJobSet(ctx, t, c, small, jobsetv1alpha2.JobSetCompleted)
		return ctx
	})
	testenv.Test(t, f)
}

// TestClaimOnPodGroupRestart: a PodGroup's claims cannot change, and a JobSet restart names new
// claims (<job>-r1-<template>): podgroups deletes the PodGroup and makes it again with them,
// the pods of attempt 1 get the new claim reserved for the new PodGroup, and the JobSet
// completes.
func TestClaimOnPodGroupRestart(t *testing.T) {
	f := framework.NamespacedFeature("a restart remakes the PodGroup with the new claims", "r1 claim on a new PodGroup", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		c, ns := claimsGate(ctx, t, cfg, true)
		rj := rjob("w", 1, 4, `[{metadata: {name: data}, `+sharedData+`, whenJobFinished: Retain}]`)
		rj.Template.Spec.Template.Annotations[framework.FailFirstAttemptAnnotationKey] = "true"
		rj.Template.Spec.Template.Annotations[framework.DelayAnnotationKey] = "8s"
		js := newJobSet(ns, "rs", rj)
		js.Annotations = map[string]string{contract.SchedulerAnnotationKey: string(contract.SchedulerKubernetes)}
		js.Spec.FailurePolicy = &jobsetv1alpha2.FailurePolicy{MaxRestarts: 1}
		framework.CreateAll(ctx, t, c, js)

		podGroupWith := func(claim string) *schedulingv1beta1.PodGroup {
			t.Helper()
			pg := &schedulingv1beta1.PodGroup{}
			framework.Eventually(ctx, t, time.Minute, "PodGroup rs listing "+claim, func(ctx context.Context) (bool, string, error) {
				if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "rs"}, pg); err != nil {
					return false, err.Error(), nil
				}
				want := []schedulingv1beta1.PodGroupResourceClaim{{Name: "data", ResourceClaimName: ptr.To(claim)}}
				return equality.Semantic.DeepEqual(pg.Spec.ResourceClaims, want), fmt.Sprintf("claims %+v", pg.Spec.ResourceClaims), nil
			})
			return pg
		}
		first := podGroupWith("rs-w-0-data")
		second := podGroupWith("rs-w-0-r1-data")
		if second.UID == first.UID {
			t.Fatalf("PodGroup rs kept UID %s across the restart", first.UID)
		}
		wantRef := resourcev1.ResourceClaimConsumerReference{APIGroup: schedulingv1beta1.GroupName, Resource: "podgroups", Name: "rs", UID: second.UID}
		framework.Eventually(ctx, t, time.Minute, "claim rs-w-0-r1-data reserved for the new PodGroup", func(ctx context.Context) (bool, string, error) {
			claim := &resourcev1.ResourceClaim{}
			if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "rs-w-0-r1-data"}, claim); err != nil {
				return false, err.Error(), nil
			}
			got := claim.Status.ReservedFor
			return len(got) == 1 && got[0] == wantRef, fmt.Sprintf("reservedFor %+v", got), nil
		})
		waitEvent(ctx, t, c, ns, js.Name, "PodGroupDeleted", "to make it again")
		framework.WaitJobSet(ctx, t, c, js, jobsetv1alpha2.JobSetCompleted)
		if js.Status.Restarts != 1 {
			t.Errorf("restarts %d, want 1", js.Status.Restarts)
		}
		return ctx
	})
	testenv.Test(t, f)
}
