package chaos_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/e2e/framework"
	"github.com/jobset-addons/jobset-addons/pkg/addon/addontest"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// TestOneAddonDown: volumeclaims is down — both replicas killed and its webhooks registered
// but not answering, as with its Deployment scaled to 0 — and every other piece goes on with
// the JobSets that use it. A JobSet of volumeclaims and the start barrier, queued (suspended)
// while volumeclaims ran, is resumed as Kueue admits it: the resume is admitted, the sequencer
// records its opened barrier and it completes. Another, running, is suspended and resumed as
// Kueue evicts and admits it again. Both, deleted in the foreground, are garbage-collected (the
// collector removes its finalizer by an update). A JobSet created meanwhile with volumeclaims'
// annotation is refused naming its webhook; one without it is admitted and completes.
func TestOneAddonDown(t *testing.T) {
	f := features.New("one add-on down").Assess("only JobSets created during the outage with its annotation wait", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		if err := waitProbe(ctx, cfg); err != nil {
			t.Fatal(err)
		}
		c := framework.Client(t, cfg)
		ns := newNamespace(ctx, t, c, "alone")
		data := fmt.Sprintf(dataPolicy, "Retain")
		queued := barrierJobSet(ns, "queued", "data").Annotation(contract.PoliciesAnnotationKey, data).Suspend(true).Obj()
		running := addontest.JobSet(ns, "running").Annotation(contract.PoliciesAnnotationKey, data).
			ReplicatedJobs(replicated("w", 1, 2, "data").PodAnnotation(framework.DelayAnnotationKey, "1h")).Obj()
		framework.CreateAll(ctx, t, c, queued, running)
		framework.Eventually(ctx, t, time.Minute, "volumeclaims made both JobSets' PVCs", func(ctx context.Context) (bool, string, error) {
			var pvcs corev1.PersistentVolumeClaimList
			err := c.List(ctx, &pvcs, client.InNamespace(ns))
			return len(pvcs.Items) == 2, fmt.Sprint(len(pvcs.Items), " PVCs"), err
		})

		vc := replicas["volumeclaims"]
		vc.Front.Pause()
		for r := range vc.N {
			if err := vc.Kill(r); err != nil {
				t.Fatal(err)
			}
		}
		defer func() {
			for r := range vc.N {
				if err := vc.Start(ctx, r); err != nil {
					t.Error(err)
				}
			}
			if err := vc.Front.Resume(); err != nil {
				t.Error(err)
			}
		}()

		// Kueue admits queued: its barrier opens and it completes.
		setSuspend(ctx, t, c, queued, false)
		framework.Eventually(ctx, t, 2*time.Minute, "queued's barrier opened and queued complete", func(ctx context.Context) (bool, string, error) {
			if err := c.Get(ctx, client.ObjectKeyFromObject(queued), queued); err != nil {
				return false, "", err
			}
			_, opened := queued.Annotations[contract.StartBarrierOpenedAnnotationKey]
			return opened && apimeta.IsStatusConditionTrue(queued.Status.Conditions, string(jobsetv1alpha2.JobSetCompleted)),
				fmt.Sprintf("opened %t, conditions %v", opened, queued.Status.Conditions), nil
		})
		// Kueue evicts running and admits it again.
		setSuspend(ctx, t, c, running, true)
		setSuspend(ctx, t, c, running, false)

		for _, js := range []*jobsetv1alpha2.JobSet{queued, running} {
			if err := c.Delete(ctx, js, client.PropagationPolicy(metav1.DeletePropagationForeground)); err != nil {
				t.Fatalf("deleting %s: %v", js.Name, err)
			}
		}
		framework.Eventually(ctx, t, 2*time.Minute, "both JobSets garbage-collected", func(ctx context.Context) (bool, string, error) {
			var left []string
			for _, js := range []*jobsetv1alpha2.JobSet{queued, running} {
				err := c.Get(ctx, client.ObjectKeyFromObject(js), &jobsetv1alpha2.JobSet{})
				if !apierrors.IsNotFound(err) {
					left = append(left, fmt.Sprintf("%s (%v)", js.Name, err))
				}
			}
			return len(left) == 0, strings.Join(left, ", "), nil
		})

		// Created during the outage: with volumeclaims' annotation refused, without it admitted.
		err := c.Create(ctx, barrierJobSet(ns, "refused", "data").Annotation(contract.PoliciesAnnotationKey, data).Obj())
		if err == nil || !strings.Contains(err.Error(), "failed calling webhook") || !strings.Contains(err.Error(), "volumeclaims.jobset-addons.io") {
			t.Errorf("a JobSet of volumeclaims created during its outage: %v, want refused naming its webhook", err)
		}
		admitted := barrierJobSet(ns, "admitted").Obj()
		framework.CreateAll(ctx, t, c, admitted)
		framework.Eventually(ctx, t, 2*time.Minute, "admitted complete", func(ctx context.Context) (bool, string, error) {
			err := c.Get(ctx, client.ObjectKeyFromObject(admitted), admitted)
			return apimeta.IsStatusConditionTrue(admitted.Status.Conditions, string(jobsetv1alpha2.JobSetCompleted)), fmt.Sprint(admitted.Status.Conditions), err
		})
		return ctx
	}).Feature()
	testenv.Test(t, f)
}

// barrierJobSet is a JobSet of 2 pods behind one start barrier, mounting mounts.
func barrierJobSet(ns, name string, mounts ...string) *addontest.JobSetWrapper {
	return addontest.JobSet(ns, name).Annotation(contract.StartBarrierAnnotationKey, string(contract.StartBarrierJobSet)).
		ReplicatedJobs(replicated("w", 1, 2, mounts...))
}

// setSuspend patches the JobSet's spec.suspend as Kueue does when it admits or evicts it.
func setSuspend(ctx context.Context, t *testing.T, c client.Client, js *jobsetv1alpha2.JobSet, suspend bool) {
	t.Helper()
	patch := fmt.Sprintf(`{"spec":{"suspend":%t}}`, suspend)
	if err := c.Patch(ctx, js.DeepCopy(), client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		t.Fatalf("%s: spec.suspend %t, as Kueue sets it: %v", js.Name, suspend, err)
	}
}
