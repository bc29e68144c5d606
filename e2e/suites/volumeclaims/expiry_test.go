package volumeclaims_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/e2e/framework"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// expireAfter is the expiry of TestExpiry's PVCs: long enough for a controller restart and a
// reuse within it, short enough for a test.
const expireAfter = 30 * time.Second

// TestExpiry: PVCs that whenDeleted: Retain keeps, with expireAfterUnused, on the testbed's
// Kubernetes, which sets the Unused condition. Two JobSets complete and are deleted; the
// controller is killed and started again (its memory lost: the clock is on the PVCs); a JobSet
// re-created under one of the names reuses its PVCs before they expire. The other's PVCs are
// deleted once unused for the expiry, not before, with an Event on each; the reused ones stay
// (their clock restarted) and the status shows when they expire. A user's PVC of a colliding
// name, even with the expiry annotation forged on it, is never deleted.
func TestExpiry(t *testing.T) {
	f := framework.NamespacedFeature("retained PVCs expire after expireAfterUnused", "deleted after it, reused ones kept, across a restart", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		framework.NeedsLocalAddon(t)
		c := framework.Client(t, cfg)
		ns := framework.NamespaceFrom(ctx)
		retention := fmt.Sprintf("{whenDeleted: Retain, expireAfterUnused: %s}", expireAfter)
		mk := func(name string) *jobsetv1alpha2.JobSet {
			return newJobSet(ns, name, policiesWith(retention), replicatedJob("w", 2, 2, "data", "ckpt"))
		}
		user := userClaim(ns, "data-gone")
		framework.CreateAll(ctx, t, c, user)
		gone, kept := mk("gone"), mk("kept")
		framework.CreateAll(ctx, t, c, gone, kept)
		goneClaims := perPodNames("ckpt", "gone", "w", 2, 2) // data-gone is the user's
		waitClaimsBound(ctx, t, c, ns, "gone", goneClaims)
		waitClaimsBound(ctx, t, c, ns, "kept", allClaims("kept"))
		for _, js := range []*jobsetv1alpha2.JobSet{gone, kept} {
			framework.WaitJobSet(ctx, t, c, js, jobsetv1alpha2.JobSetCompleted)
		}
		unused := waitUnused(ctx, t, c, ns, goneClaims)
		deleteJobSets(ctx, t, c, gone, kept)

		restartVolumeClaims(ctx, t, c)

		again := mk("kept")
		delay(again, "1s")
		framework.CreateAll(ctx, t, c, again)
		framework.WaitJobSet(ctx, t, c, again, jobsetv1alpha2.JobSetCompleted)
		reused := waitClaimsBound(ctx, t, c, ns, "kept", allClaims("kept"))

		waitClaimsGone(ctx, t, c, ns, "gone", goneClaims)
		for n, since := range unused {
			if early := since.Add(expireAfter).Sub(time.Now()); early > 0 {
				t.Errorf("PVC %s was deleted %s before its expiry", n, early)
			}
		}
		checkReused(ctx, t, c, ns, again, reused)
		expectClaimEvent(ctx, t, c, ns, goneClaims[0], "VolumeClaimExpired")
		status := framework.AddonsStatus(ctx, t, cfg, ns, "kept")
		if !strings.Contains(status, "EXPIRES") || !strings.Contains(status, "(in ") {
			t.Errorf("the status does not say when the reused PVCs expire:\n%s", status)
		}
		framework.ExpectMetrics(ctx, t, "volumeclaims", `jobset_addons_volumeclaims_retained_claims{age="lt1h"}`,
			`jobset_addons_volumeclaims_retained_bytes{age="lt1h"}`, "jobset_addons_volumeclaims_expired_total")
		var got corev1.PersistentVolumeClaim
		if err := c.Get(ctx, client.ObjectKeyFromObject(user), &got); err != nil || !got.DeletionTimestamp.IsZero() {
			t.Errorf("the user's PVC data-gone was deleted: %v", err)
		}
		return ctx
	})
	testenv.Test(t, f)
}

// userClaim is a user's PVC of name, with the add-on's expiry annotation forged on it.
func userClaim(ns, name string) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
			Annotations: map[string]string{contract.VolumeClaimExpireAfterUnusedAnnotationKey: "1s"}},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany},
			StorageClassName: ptr.To("standard"),
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}
}

// waitUnused waits until Kubernetes says each PVC is unused, and returns since when.
func waitUnused(ctx context.Context, t *testing.T, c client.Client, ns string, names []string) map[string]time.Time {
	t.Helper()
	out := map[string]time.Time{}
	framework.Eventually(ctx, t, time.Minute, "PVCs Unused", func(ctx context.Context) (bool, string, error) {
		for _, n := range names {
			var pvc corev1.PersistentVolumeClaim
			if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: n}, &pvc); err != nil {
				return false, err.Error(), nil
			}
			cond := contract.UnusedCondition(&pvc)
			if cond == nil || cond.Status != corev1.ConditionTrue {
				return false, fmt.Sprintf("%s: %+v", n, cond), nil
			}
			out[n] = cond.LastTransitionTime.Time
		}
		return true, "", nil
	})
	return out
}

// deleteJobSets deletes the JobSets, their Jobs and pods, and waits until they are gone.
func deleteJobSets(ctx context.Context, t *testing.T, c client.Client, jss ...*jobsetv1alpha2.JobSet) {
	t.Helper()
	for _, js := range jss {
		if err := c.Delete(ctx, js, client.PropagationPolicy(metav1.DeletePropagationForeground)); err != nil {
			t.Fatal(err)
		}
		framework.Eventually(ctx, t, time.Minute, js.Name+" gone", func(ctx context.Context) (bool, string, error) {
			err := c.Get(ctx, client.ObjectKeyFromObject(js), &jobsetv1alpha2.JobSet{})
			return apierrors.IsNotFound(err), fmt.Sprint(err), nil
		})
	}
}

// restartVolumeClaims kills the add-on and starts it again.
func restartVolumeClaims(ctx context.Context, t *testing.T, c client.Client) {
	t.Helper()
	tb, err := framework.DefaultConfig()
	if err != nil {
		t.Fatal(err)
	}
	if err := framework.KillAddon(tb, "volumeclaims"); err != nil {
		t.Fatalf("killing volumeclaims: %v", err)
	}
	time.Sleep(2 * time.Second)
	if err := framework.StartAddon(ctx, tb, "volumeclaims", func(ctx context.Context) error { return probe(ctx, c) }, "--log-level=2"); err != nil {
		t.Fatalf("starting volumeclaims again: %v", err)
	}
}

// checkReused checks that the PVCs of js are those of uids, taken by js (its UID, the time) and
// kept for some seconds more.
func checkReused(ctx context.Context, t *testing.T, c client.Client, ns string, js *jobsetv1alpha2.JobSet, uids map[string]types.UID) {
	t.Helper()
	got, err := claims(ctx, c, ns, js.Name)
	if err != nil {
		t.Fatal(err)
	}
	for n, pvc := range got {
		if pvc.Annotations[contract.VolumeClaimJobSetUIDAnnotationKey] != string(js.UID) || pvc.Annotations[contract.VolumeClaimClaimedAtAnnotationKey] == "" {
			t.Errorf("PVC %s was not taken by the new JobSet: %v", n, pvc.Annotations)
		}
	}
	expectClaimsStay(ctx, t, c, ns, js.Name, uids)
}

// expectClaimEvent waits for an Event of reason about the PVC name (which may be gone).
func expectClaimEvent(ctx context.Context, t *testing.T, c client.Client, ns, name, reason string) {
	t.Helper()
	framework.Eventually(ctx, t, 30*time.Second, reason+" on "+name, func(ctx context.Context) (bool, string, error) {
		var list corev1.EventList
		if err := c.List(ctx, &list, client.InNamespace(ns)); err != nil {
			return false, err.Error(), nil
		}
		for _, e := range list.Items {
			if e.InvolvedObject.Kind == "PersistentVolumeClaim" && e.InvolvedObject.Name == name && e.Reason == reason {
				t.Logf("%s: %s", reason, e.Message)
				return true, "", nil
			}
		}
		return false, "none yet", nil
	})
}
