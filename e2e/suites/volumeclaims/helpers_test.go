package volumeclaims_test

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/e2e/framework"
	"github.com/jobset-addons/jobset-addons/pkg/addon/addontest"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// newJobSet is a JobSet with the policies annotation (none when policies is empty).
func newJobSet(ns, name, policies string, rjobs ...*addontest.ReplicatedJobWrapper) *jobsetv1alpha2.JobSet {
	js := addontest.JobSet(ns, name).ReplicatedJobs(rjobs...)
	if policies != "" {
		js.VolumeClaimsPolicies(policies)
	}
	return js.Obj()
}

// replicatedJob has replicas Jobs of completions pods (all at once), no retries, whose one
// container mounts the volumes named mounts.
func replicatedJob(name string, replicas, completions int32, mounts ...string) *addontest.ReplicatedJobWrapper {
	return addontest.ReplicatedJob(name).Replicas(replicas).Pods(completions).CompletionMode(nil).Mount(mounts...)
}

// podAnnotate sets an annotation on the pod templates of every ReplicatedJob of js.
func podAnnotate(js *jobsetv1alpha2.JobSet, key, value string) {
	for i := range js.Spec.ReplicatedJobs {
		meta := &js.Spec.ReplicatedJobs[i].Template.Spec.Template.ObjectMeta
		if meta.Annotations == nil {
			meta.Annotations = map[string]string{}
		}
		meta.Annotations[key] = value
	}
}

// perPodNames are the per-pod PVC names of a template for a ReplicatedJob, written out by the
// convention <claim>-<jobset>-<replicatedJob>-<jobIndex>-<completionIndex> (not with the
// contract's builder, so that the test checks the convention).
func perPodNames(claim, jobSet, rj string, replicas, completions int) []string {
	var names []string
	for j := range replicas {
		for p := range completions {
			names = append(names, fmt.Sprintf("%s-%s-%s-%d-%d", claim, jobSet, rj, j, p))
		}
	}
	return names
}

// claims lists the PVCs of the add-on for jobSet, by name.
func claims(ctx context.Context, c client.Client, ns, jobSet string) (map[string]corev1.PersistentVolumeClaim, error) {
	var list corev1.PersistentVolumeClaimList
	if err := c.List(ctx, &list, client.InNamespace(ns), client.MatchingLabels{
		contract.ManagedByLabelKey: contract.VolumeClaimsManagedByValue, contract.JobSetNameLabelKey: jobSet,
	}); err != nil {
		return nil, err
	}
	out := map[string]corev1.PersistentVolumeClaim{}
	for _, pvc := range list.Items {
		if pvc.DeletionTimestamp.IsZero() {
			out[pvc.Name] = pvc
		}
	}
	return out, nil
}

// waitClaimsBound waits until exactly the PVCs names exist for jobSet and are Bound, and
// returns their UIDs.
func waitClaimsBound(ctx context.Context, t *testing.T, c client.Client, ns, jobSet string, names []string) map[string]types.UID {
	t.Helper()
	uids := map[string]types.UID{}
	framework.Eventually(ctx, t, time.Minute, fmt.Sprintf("%d PVCs Bound for %s", len(names), jobSet), func(ctx context.Context) (bool, string, error) {
		got, err := claims(ctx, c, ns, jobSet)
		if err != nil {
			return false, err.Error(), nil
		}
		bound := 0
		for _, n := range names {
			if pvc, ok := got[n]; ok && pvc.Status.Phase == corev1.ClaimBound {
				bound++
				uids[n] = pvc.UID
			}
		}
		return bound == len(names) && len(got) == len(names), fmt.Sprintf("%d of %d Bound, %d exist: %v", bound, len(names), len(got), keys(got)), nil
	})
	return uids
}

// waitClaimsGone waits until none of names exists: not even Terminating, its storage released.
func waitClaimsGone(ctx context.Context, t *testing.T, c client.Client, ns, jobSet string, names []string) {
	t.Helper()
	framework.Eventually(ctx, t, time.Minute, fmt.Sprintf("PVCs of %s gone", jobSet), func(ctx context.Context) (bool, string, error) {
		var left []string
		for _, n := range names {
			err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: n}, &corev1.PersistentVolumeClaim{})
			switch {
			case err == nil:
				left = append(left, n)
			case !apierrors.IsNotFound(err):
				return false, err.Error(), nil
			}
		}
		return len(left) == 0, fmt.Sprintf("left (Terminating or not): %v", left), nil
	})
}

// waitClaimsDeleted waits until each of names is gone or Terminating: deleted by retention,
// perhaps still held by the pods that ran with it (TestHeldClaims).
func waitClaimsDeleted(ctx context.Context, t *testing.T, c client.Client, ns, jobSet string, names []string) {
	t.Helper()
	framework.Eventually(ctx, t, time.Minute, fmt.Sprintf("PVCs of %s deleted", jobSet), func(ctx context.Context) (bool, string, error) {
		got, err := claims(ctx, c, ns, jobSet) // those not Terminating
		if err != nil {
			return false, err.Error(), nil
		}
		var left []string
		for _, n := range names {
			if _, ok := got[n]; ok {
				left = append(left, n)
			}
		}
		return len(left) == 0, fmt.Sprintf("left: %v", left), nil
	})
}

// waitClaimsTerminating waits until each of names exists, Terminating, and returns them.
func waitClaimsTerminating(ctx context.Context, t *testing.T, c client.Client, ns string, names []string) map[string]types.UID {
	t.Helper()
	uids := map[string]types.UID{}
	framework.Eventually(ctx, t, time.Minute, fmt.Sprintf("%d PVCs Terminating", len(names)), func(ctx context.Context) (bool, string, error) {
		for _, n := range names {
			var pvc corev1.PersistentVolumeClaim
			if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: n}, &pvc); err != nil {
				return false, n + ": " + err.Error(), nil
			}
			if pvc.DeletionTimestamp.IsZero() {
				return false, n + " not deleted", nil
			}
			uids[n] = pvc.UID
		}
		return true, "", nil
	})
	return uids
}

// expectEvents waits until the JobSet has an Event of each reason.
func expectEvents(ctx context.Context, t *testing.T, c client.Client, js *jobsetv1alpha2.JobSet, reasons ...string) {
	t.Helper()
	framework.Eventually(ctx, t, 30*time.Second, fmt.Sprintf("Events %v", reasons), func(ctx context.Context) (bool, string, error) {
		got, err := framework.EventReasons(ctx, c, js)
		if err != nil {
			return false, err.Error(), nil
		}
		for _, r := range reasons {
			if got[r] == 0 {
				return false, fmt.Sprint(got), nil
			}
		}
		return true, "", nil
	})
}

// expectClaimsStay checks for a few seconds that the PVCs of uids keep existing, unchanged.
func expectClaimsStay(ctx context.Context, t *testing.T, c client.Client, ns, jobSet string, uids map[string]types.UID) {
	t.Helper()
	for range 15 {
		got, err := claims(ctx, c, ns, jobSet)
		if err != nil {
			t.Fatal(err)
		}
		for n, uid := range uids {
			if pvc, ok := got[n]; !ok || pvc.UID != uid {
				t.Fatalf("PVC %s was deleted or replaced; retention says Retain", n)
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// checkPodVolumes checks that every pod of jobSet mounts, for each per-pod template, the PVC of
// its own ReplicatedJob, Job index and completion index, and for each shared template the
// shared PVC; it returns how many pods it checked.
func checkPodVolumes(ctx context.Context, t *testing.T, c client.Client, ns, jobSet string, perPod map[string][]string, shared map[string]string) int {
	t.Helper()
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{contract.JobSetNameLabelKey: jobSet}); err != nil {
		t.Fatal(err)
	}
	for _, pod := range pods.Items {
		rj := pod.Labels[contract.ReplicatedJobNameLabelKey]
		want := map[string]string{}
		for _, tmpl := range perPod[rj] {
			want[tmpl] = fmt.Sprintf("%s-%s-%s-%s-%s", tmpl, jobSet, rj, pod.Labels[contract.JobIndexLabelKey], pod.Annotations[batchv1.JobCompletionIndexAnnotation])
		}
		for tmpl, claim := range shared {
			for _, ctr := range pod.Spec.Containers {
				for _, m := range ctr.VolumeMounts {
					if m.Name == tmpl {
						want[tmpl] = claim
					}
				}
			}
		}
		for tmpl, claim := range want {
			found := false
			for _, v := range pod.Spec.Volumes {
				if v.Name == tmpl && v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == claim {
					found = true
				}
			}
			if !found {
				t.Errorf("pod %s: no volume %s of PVC %s; volumes %+v", pod.Name, tmpl, claim, pod.Spec.Volumes)
			}
		}
	}
	return len(pods.Items)
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// delay makes the pods of js run for d, so that the test sees them and their PVCs before the
// JobSet finishes.
func delay(js *jobsetv1alpha2.JobSet, d string) { podAnnotate(js, framework.DelayAnnotationKey, d) }
