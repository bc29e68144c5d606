package resourceclaims_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/e2e/framework"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// TestKEP762Example runs examples/resourceclaims/kep762-imex.yaml: 3 worker-group Jobs with
// the imex-channel and shared-data templates give 6 claims, each allocated; in every pod the
// worker container references imex-channel and every container shared-data; the claims go
// when their Jobs finish.
func TestKEP762Example(t *testing.T) {
	f := framework.NamespacedFeature("KEP-762 IMEX story", "6 claims, allocated, referenced as asked, gone at the end", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		c := framework.Client(t, cfg)
		ns := framework.NamespaceFrom(ctx)
		root, err := framework.RepoRoot()
		if err != nil {
			t.Fatal(err)
		}
		objs := framework.Objects(t, filepath.Join(root, "examples/resourceclaims/kep762-imex.yaml"))
		js := objs[0].(*jobsetv1alpha2.JobSet)
		js.Namespace = ns
		framework.CreateAll(ctx, t, c, js)

		var want []string
		for j := range 3 {
			for _, tmpl := range []string{"imex-channel", "shared-data"} {
				want = append(want, fmt.Sprintf("shared-resource-jobset-worker-group-%d-%s", j, tmpl))
			}
		}
		waitAllocated(ctx, t, c, ns, js.Name, want)

		waitOwnedByJobs(ctx, t, c, ns, js.Name)
		for _, cl := range claimsOf(ctx, t, c, ns, js.Name) {
			job := cl.OwnerReferences[0].Name
			if cl.Name != job+"-"+cl.Labels[contract.ResourceClaimTemplateLabelKey] ||
				cl.Labels[contract.ReplicatedJobNameLabelKey] != "worker-group" || cl.Labels[contract.JobIndexLabelKey] == "" {
				t.Errorf("claim %s of Job %s: labels %v", cl.Name, job, cl.Labels)
			}
		}
		pods := podsOf(ctx, t, c, ns, js.Name)
		if len(pods) != 3 {
			t.Fatalf("%d pods, want 3", len(pods))
		}
		for i := range pods {
			pod := &pods[i]
			job := pod.Labels[batchv1.JobNameLabel]
			claims, containers := podClaims(pod)
			wantClaims := map[string]string{"imex-channel": job + "-imex-channel", "shared-data": job + "-shared-data"}
			if fmt.Sprint(claims) != fmt.Sprint(wantClaims) {
				t.Errorf("pod %s: claims %v, want %v", pod.Name, claims, wantClaims)
			}
			wantContainers := map[string]string{"worker": "imex-channel,shared-data", "helper": "shared-data"}
			if fmt.Sprint(containers) != fmt.Sprint(wantContainers) {
				t.Errorf("pod %s: containers reference %v, want %v", pod.Name, containers, wantContainers)
			}
			if pod.Spec.NodeName == "" {
				t.Errorf("pod %s was not scheduled", pod.Name)
			}
		}
		framework.WaitJobSet(ctx, t, c, js, jobsetv1alpha2.JobSetCompleted)
		waitClaims(ctx, t, c, ns, js.Name, nil)
		waitEvent(ctx, t, c, ns, js.Name, "ResourceClaimsCreated", "shared-resource-jobset-worker-group-0-imex-channel")
		waitEvent(ctx, t, c, ns, js.Name, "ResourceClaimsDeleted", "shared-resource-jobset-worker-group-2-shared-data")
		return ctx
	})
	testenv.Test(t, f)
}

const sharedData = `spec: {devices: {requests: [{name: d, exactly: {deviceClassName: shared-data-resource}}]}}`

// TestPodsOfAJobShareItsClaim: the pods of one Job (parallelism 2) use the same claim, on a
// network-attached device; a Retain template's claims outlive the finished Jobs, Delete ones
// do not, and deleting the JobSet leaves no claim.
func TestPodsOfAJobShareItsClaim(t *testing.T) {
	f := framework.NamespacedFeature("pods of a Job share its claim; Retain and Delete", "shared, retained, then gone with the JobSet", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		c := framework.Client(t, cfg)
		ns := framework.NamespaceFrom(ctx)
		js := newJobSet(ns, "share", rjob("w", 2, 2, `[{metadata: {name: data}, `+sharedData+`, whenJobFinished: Retain}, {metadata: {name: scratch}, `+sharedData+`}]`))
		framework.CreateAll(ctx, t, c, js)
		all := []string{"share-w-0-data", "share-w-0-scratch", "share-w-1-data", "share-w-1-scratch"}
		waitAllocated(ctx, t, c, ns, js.Name, all)
		pods := podsOf(ctx, t, c, ns, js.Name)
		if len(pods) != 4 {
			t.Fatalf("%d pods, want 4", len(pods))
		}
		byJob := map[string][]string{}
		for i := range pods {
			claims, _ := podClaims(&pods[i])
			job := pods[i].Labels[batchv1.JobNameLabel]
			byJob[job] = append(byJob[job], fmt.Sprint(claims))
		}
		for job, refs := range byJob {
			want := fmt.Sprint(map[string]string{"data": job + "-data", "scratch": job + "-scratch"})
			if len(refs) != 2 || refs[0] != want || refs[1] != want {
				t.Errorf("Job %s: its pods reference %v, want both %s", job, refs, want)
			}
		}
		framework.WaitJobSet(ctx, t, c, js, jobsetv1alpha2.JobSetCompleted)
		waitClaims(ctx, t, c, ns, js.Name, []string{"share-w-0-data", "share-w-1-data"})

		if err := c.Delete(ctx, js, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil {
			t.Fatal(err)
		}
		waitClaims(ctx, t, c, ns, js.Name, nil)
		return ctx
	})
	testenv.Test(t, f)
}

// TestRestart: pods fail in the first attempt, JobSet restarts, and the new Jobs' pods use new
// claims (<job>-r1-<template>); the old claims go with the old Jobs. Retain keeps the new ones
// after completion, so that what is left is exactly the last attempt's.
func TestRestart(t *testing.T) {
	f := framework.NamespacedFeature("a JobSet restart gives new claims", "r1 claims, old ones gone", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		c := framework.Client(t, cfg)
		ns := framework.NamespaceFrom(ctx)
		rj := rjob("w", 2, 1, `[{metadata: {name: data}, `+sharedData+`, whenJobFinished: Retain}]`)
		rj.Template.Spec.Template.Annotations[framework.FailFirstAttemptAnnotationKey] = "true"
		js := newJobSet(ns, "restart", rj)
		js.Spec.FailurePolicy = &jobsetv1alpha2.FailurePolicy{MaxRestarts: 1}
		framework.CreateAll(ctx, t, c, js)
		waitAllocated(ctx, t, c, ns, js.Name, []string{"restart-w-0-data", "restart-w-1-data"})
		framework.WaitJobSet(ctx, t, c, js, jobsetv1alpha2.JobSetCompleted)
		if js.Status.Restarts != 1 {
			t.Fatalf("restarts %d, want 1", js.Status.Restarts)
		}
		waitClaims(ctx, t, c, ns, js.Name, []string{"restart-w-0-r1-data", "restart-w-1-r1-data"})
		for _, pod := range podsOf(ctx, t, c, ns, js.Name) {
			claims, _ := podClaims(&pod)
			want := pod.Labels[batchv1.JobNameLabel] + "-r1-data"
			if pod.Labels[contract.RestartAttemptLabelKey] == "1" && claims["data"] != want {
				t.Errorf("pod %s of attempt 1 references %v, want %s", pod.Name, claims, want)
			}
		}
		return ctx
	})
	testenv.Test(t, f)
}

// TestSuspendResume: a JobSet created suspended (as Kueue does) gets its claims, unallocated,
// with no pods; once resumed the pods use them and they go when the Jobs finish. A suspended
// JobSet that is deleted leaves no claim.
func TestSuspendResume(t *testing.T) {
	f := framework.NamespacedFeature("suspend and resume", "claims wait, then serve, then go", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		c := framework.Client(t, cfg)
		ns := framework.NamespaceFrom(ctx)
		tmpl := `[{metadata: {name: data}, ` + sharedData + `}]`
		resumed := newJobSet(ns, "resumed", rjob("w", 2, 1, tmpl))
		deleted := newJobSet(ns, "deleted", rjob("w", 2, 1, tmpl))
		for _, js := range []*jobsetv1alpha2.JobSet{resumed, deleted} {
			js.Spec.Suspend = ptr.To(true)
		}
		framework.CreateAll(ctx, t, c, resumed, deleted)
		waitClaims(ctx, t, c, ns, "resumed", []string{"resumed-w-0-data", "resumed-w-1-data"})
		waitClaims(ctx, t, c, ns, "deleted", []string{"deleted-w-0-data", "deleted-w-1-data"})
		for _, cl := range claimsOf(ctx, t, c, ns, "resumed") {
			if cl.Status.Allocation != nil {
				t.Errorf("claim %s is allocated while its JobSet is suspended", cl.Name)
			}
		}
		if pods := podsOf(ctx, t, c, ns, "resumed"); len(pods) != 0 {
			t.Errorf("%d pods while suspended", len(pods))
		}

		if err := c.Delete(ctx, deleted, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil {
			t.Fatal(err)
		}
		patch := []byte(`{"spec":{"suspend":false}}`)
		if err := c.Patch(ctx, resumed, client.RawPatch(types.MergePatchType, patch)); err != nil {
			t.Fatal(err)
		}
		waitAllocated(ctx, t, c, ns, "resumed", []string{"resumed-w-0-data", "resumed-w-1-data"})
		framework.WaitJobSet(ctx, t, c, resumed, jobsetv1alpha2.JobSetCompleted)
		waitClaims(ctx, t, c, ns, "resumed", nil)
		waitClaims(ctx, t, c, ns, "deleted", nil)
		return ctx
	})
	testenv.Test(t, f)
}
