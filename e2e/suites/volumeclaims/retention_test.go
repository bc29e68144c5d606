package volumeclaims_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/e2e/framework"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// policiesWith is one shared template (data) and one per-pod template (ckpt) for ReplicatedJob
// w, both with retention.
func policiesWith(retention string) string {
	return fmt.Sprintf(`
- templates: [{metadata: {name: data}, spec: {accessModes: [ReadWriteMany], resources: {requests: {storage: 1Gi}}}}]
  retentionPolicy: %[1]s
- targetReplicatedJobs: [w]
  templates: [{metadata: {name: ckpt}, spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}}]
  retentionPolicy: %[1]s
`, retention)
}

func allClaims(jobSet string) []string {
	return append([]string{"data-" + jobSet}, perPodNames("ckpt", jobSet, "w", 2, 2)...)
}

// TestRetentionMatrix: each of whenComplete, whenFailed and whenDeleted, set to Delete and
// to Retain, on a shared and a per-pod PVC. Delete means gone, not Terminating: whenComplete
// and whenFailed Delete come with finishedPods: Delete (the JobSet is kept; its finished pods
// would hold the PVCs, see TestHeldClaims), whenDeleted Delete takes the pods with the JobSet.
func TestRetentionMatrix(t *testing.T) {
	for _, event := range []string{"complete", "fail", "delete"} {
		for _, act := range []string{"Delete", "Retain"} {
			field := map[string]string{"complete": "whenComplete", "fail": "whenFailed", "delete": "whenDeleted"}[event]
			f := framework.NamespacedFeature(fmt.Sprintf("%s: %s", field, act), "PVCs after the event", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
				c := framework.Client(t, cfg)
				ns := framework.NamespaceFrom(ctx)
				name := fmt.Sprintf("r-%s-%s", event, map[string]string{"Delete": "d", "Retain": "r"}[act])
				retention := fmt.Sprintf("{%s: %s}", field, act)
				if act == "Delete" && event != "delete" {
					retention = fmt.Sprintf("{%s: Delete, finishedPods: Delete}", field)
				}
				js := newJobSet(ns, name, policiesWith(retention), replicatedJob("w", 2, 2, "data", "ckpt"))
				delay(js, "2s")
				if event == "fail" {
					podAnnotate(js, framework.FailAnnotationKey, "true")
				}
				framework.CreateAll(ctx, t, c, js)
				uids := waitClaimsBound(ctx, t, c, ns, name, allClaims(name))
				switch event {
				case "complete":
					framework.WaitJobSet(ctx, t, c, js, jobsetv1alpha2.JobSetCompleted)
				case "fail":
					framework.WaitJobSet(ctx, t, c, js, jobsetv1alpha2.JobSetFailed)
				case "delete":
					if err := c.Delete(ctx, js, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil {
						t.Fatal(err)
					}
					framework.Eventually(ctx, t, time.Minute, "JobSet gone", func(ctx context.Context) (bool, string, error) {
						err := c.Get(ctx, client.ObjectKeyFromObject(js), js)
						return apierrors.IsNotFound(err), fmt.Sprint(err), nil
					})
				}
				if act == "Delete" {
					waitClaimsGone(ctx, t, c, ns, name, allClaims(name))
					if event != "delete" {
						// The JobSet is still there: its Jobs kept, its pods gone with the storage.
						if err := c.Get(ctx, client.ObjectKeyFromObject(js), js); err != nil {
							t.Fatalf("the JobSet is gone: %v", err)
						}
						expectEvents(ctx, t, c, js, "FinishedPodsDeleted", "VolumeClaimsReleased")
					}
				} else {
					expectClaimsStay(ctx, t, c, ns, name, uids)
				}
				return ctx
			})
			testenv.Test(t, f)
		}
	}
}

// TestRestartKeepsClaims: a JobSet whose first attempt fails restarts (failurePolicy) and
// completes; its PVCs, even with whenFailed Delete, are the same objects throughout.
func TestRestartKeepsClaims(t *testing.T) {
	f := framework.NamespacedFeature("a JobSet restart keeps its PVCs", "same PVCs after the restart", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		c := framework.Client(t, cfg)
		ns := framework.NamespaceFrom(ctx)
		js := newJobSet(ns, "restarts", policiesWith("{whenFailed: Delete}"), replicatedJob("w", 2, 2, "data", "ckpt"))
		js.Spec.FailurePolicy = &jobsetv1alpha2.FailurePolicy{MaxRestarts: 2}
		podAnnotate(js, framework.FailFirstAttemptAnnotationKey, "true")
		framework.CreateAll(ctx, t, c, js)
		before := waitClaimsBound(ctx, t, c, ns, js.Name, allClaims(js.Name))
		framework.WaitJobSet(ctx, t, c, js, jobsetv1alpha2.JobSetCompleted)
		if js.Status.Restarts < 1 {
			t.Fatalf("JobSet completed with %d restarts, want at least 1", js.Status.Restarts)
		}
		after := waitClaimsBound(ctx, t, c, ns, js.Name, allClaims(js.Name))
		for n, uid := range before {
			if after[n] != uid {
				t.Errorf("PVC %s was replaced across the restart", n)
			}
		}
		checkPodVolumes(ctx, t, c, ns, js.Name, map[string][]string{"w": {"ckpt"}}, map[string]string{"data": "data-" + js.Name})
		t.Logf("%d PVCs kept across %d restart(s)", len(after), js.Status.Restarts)
		return ctx
	})
	testenv.Test(t, f)
}

// TestRecreatedJobSetReusesClaims: PVCs retained on delete are used again, as they are, by a
// JobSet of the same name.
func TestRecreatedJobSetReusesClaims(t *testing.T) {
	f := framework.NamespacedFeature("a re-created JobSet reuses the retained PVCs", "same PVCs, Reused event", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		c := framework.Client(t, cfg)
		ns := framework.NamespaceFrom(ctx)
		mk := func() *jobsetv1alpha2.JobSet {
			js := newJobSet(ns, "again", policiesWith("{whenDeleted: Retain}"), replicatedJob("w", 2, 2, "data", "ckpt"))
			delay(js, "2s")
			return js
		}
		first := mk()
		framework.CreateAll(ctx, t, c, first)
		before := waitClaimsBound(ctx, t, c, ns, first.Name, allClaims(first.Name))
		if err := c.Delete(ctx, first, client.PropagationPolicy(metav1.DeletePropagationForeground)); err != nil {
			t.Fatal(err)
		}
		framework.Eventually(ctx, t, time.Minute, "first JobSet gone", func(ctx context.Context) (bool, string, error) {
			err := c.Get(ctx, client.ObjectKeyFromObject(first), &jobsetv1alpha2.JobSet{})
			return apierrors.IsNotFound(err), fmt.Sprint(err), nil
		})
		second := mk()
		framework.CreateAll(ctx, t, c, second)
		framework.WaitJobSet(ctx, t, c, second, jobsetv1alpha2.JobSetCompleted)
		after := waitClaimsBound(ctx, t, c, ns, second.Name, allClaims(second.Name))
		for n, uid := range before {
			if after[n] != uid {
				t.Errorf("PVC %s was replaced, want the retained one reused", n)
			}
		}
		checkPodVolumes(ctx, t, c, ns, second.Name, map[string][]string{"w": {"ckpt"}}, map[string]string{"data": "data-" + second.Name})
		framework.Eventually(ctx, t, 30*time.Second, "VolumeClaimsReused event", func(ctx context.Context) (bool, string, error) {
			reasons, err := framework.EventReasons(ctx, c, second)
			return err == nil && reasons["VolumeClaimsReused"] > 0, fmt.Sprint(reasons, err), nil
		})
		return ctx
	})
	testenv.Test(t, f)
}

// TestUserClaimNeverDeleted: a PVC the user made with the name a policy gives is mounted as it
// is and survives every retention of the policy.
func TestUserClaimNeverDeleted(t *testing.T) {
	f := framework.NamespacedFeature("a user's PVC of a colliding name is mounted but never deleted", "mounted, kept, untouched", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		c := framework.Client(t, cfg)
		ns := framework.NamespaceFrom(ctx)
		js := newJobSet(ns, "mine", policiesWith("{whenComplete: Delete, whenFailed: Delete, whenDeleted: Delete}"), replicatedJob("w", 2, 2, "data", "ckpt"))
		delay(js, "2s")
		user := &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "data-mine", Labels: map[string]string{"owner": "me"}},
			Spec: corev1.PersistentVolumeClaimSpec{
				AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany},
				StorageClassName: ptr.To("standard"),
				Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("2Gi")}},
			},
		}
		framework.CreateAll(ctx, t, c, user, js)
		waitClaimsBound(ctx, t, c, ns, js.Name, perPodNames("ckpt", js.Name, "w", 2, 2))
		framework.WaitJobSet(ctx, t, c, js, jobsetv1alpha2.JobSetCompleted)
		checkPodVolumes(ctx, t, c, ns, js.Name, nil, map[string]string{"data": "data-mine"})
		waitClaimsDeleted(ctx, t, c, ns, js.Name, perPodNames("ckpt", js.Name, "w", 2, 2))
		if err := c.Delete(ctx, js, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil {
			t.Fatal(err)
		}
		for range 15 {
			var got corev1.PersistentVolumeClaim
			if err := c.Get(ctx, client.ObjectKeyFromObject(user), &got); err != nil {
				t.Fatalf("the user's PVC: %v", err)
			}
			if got.UID != user.UID || !got.DeletionTimestamp.IsZero() || len(got.OwnerReferences) > 0 || got.Labels[contract.ManagedByLabelKey] != "" {
				t.Fatalf("the user's PVC was changed: %+v", got.ObjectMeta)
			}
			time.Sleep(200 * time.Millisecond)
		}
		return ctx
	})
	testenv.Test(t, f)
}
