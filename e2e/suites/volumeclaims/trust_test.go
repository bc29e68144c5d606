package volumeclaims_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/e2e/framework"
	"github.com/jobset-addons/jobset-addons/e2e/testbed"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// sharedRetained is a policy of one shared PVC data, retained when its JobSet is deleted, that
// expires after expire.
func sharedRetained(expire time.Duration) string {
	return fmt.Sprintf(`[{templates: [{metadata: {name: data}, spec: {accessModes: [ReadWriteMany], resources: {requests: {storage: 1Gi}}}}],
  retentionPolicy: {whenDeleted: Retain, expireAfterUnused: %s}}]`, expire)
}

// reservedRefusal is what the chart's reserved-keys policy says of key (a path into metadata).
func reservedRefusal(path string) string {
	return path + ": Forbidden: written only by the volumeclaims add-on"
}

// TestReservedKeys: the labels and annotations volumeclaims writes on its PVCs are its own
// (the chart's ValidatingAdmissionPolicy jobset-addons-volumeclaims-reserved-keys, on by
// default). Anyone else's patch that sets, changes or removes one, even a cluster admin's, is
// refused naming the key, and so is a create of a PVC that carries the managed-by label; a
// patch of another label passes, and the add-on's own writes go on (its expiry writes its first
// sight of the retained PVC).
func TestReservedKeys(t *testing.T) {
	f := framework.NamespacedFeature("the add-on's keys on its PVCs", "written only by volumeclaims", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		c := framework.Client(t, cfg)
		ns := framework.NamespaceFrom(ctx)
		js := newJobSet(ns, "keys", sharedRetained(time.Hour), replicatedJob("w", 1, 1, "data"))
		framework.CreateAll(ctx, t, c, js)
		waitClaimsBound(ctx, t, c, ns, "keys", []string{"data-keys"})
		pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "data-keys"}}

		old := time.Now().Add(-365 * 24 * time.Hour).UTC().Format(time.RFC3339)
		for _, tc := range []struct{ what, patch, path string }{
			{"unused-since set", fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, contract.VolumeClaimUnusedSinceAnnotationKey, old),
				"metadata.annotations[" + contract.VolumeClaimUnusedSinceAnnotationKey + "]"},
			{"expire-after-unused changed", fmt.Sprintf(`{"metadata":{"annotations":{%q:"1s"}}}`, contract.VolumeClaimExpireAfterUnusedAnnotationKey),
				"metadata.annotations[" + contract.VolumeClaimExpireAfterUnusedAnnotationKey + "]"},
			{"first-seen set", fmt.Sprintf(`{"metadata":{"annotations":{%q:"%s x"}}}`, contract.VolumeClaimFirstSeenAnnotationKey, old),
				"metadata.annotations[" + contract.VolumeClaimFirstSeenAnnotationKey + "]"},
			{"jobset-name changed", fmt.Sprintf(`{"metadata":{"labels":{%q:"other"}}}`, contract.JobSetNameLabelKey),
				"metadata.labels[" + contract.JobSetNameLabelKey + "]"},
			{"managed-by removed", fmt.Sprintf(`{"metadata":{"labels":{%q:null}}}`, contract.ManagedByLabelKey),
				"metadata.labels[" + contract.ManagedByLabelKey + "]"},
		} {
			err := c.Patch(ctx, pvc.DeepCopy(), client.RawPatch(types.MergePatchType, []byte(tc.patch)))
			if err == nil || !strings.Contains(err.Error(), reservedRefusal(tc.path)) {
				t.Errorf("%s: a user's patch = %v, want it refused with %q", tc.what, err, reservedRefusal(tc.path))
			}
		}
		if err := c.Patch(ctx, pvc.DeepCopy(), client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"team":"a"}}}`))); err != nil {
			t.Errorf("a user's patch of a label of its own: %v", err)
		}

		forged := &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "forged", Labels: map[string]string{
				contract.ManagedByLabelKey: contract.VolumeClaimsManagedByValue, contract.JobSetNameLabelKey: "keys"}},
			Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}},
		}
		// The policy names the first reserved label it finds, and CEL walks a map's keys in no
		// set order: either of the two.
		want := reservedRefusal("metadata.labels[" + contract.ManagedByLabelKey + "]")
		alsoWant := reservedRefusal("metadata.labels[" + contract.JobSetNameLabelKey + "]")
		if err := c.Create(ctx, forged); err == nil || !strings.Contains(err.Error(), want) && !strings.Contains(err.Error(), alsoWant) {
			t.Errorf("a user's PVC with the managed-by label: create = %v, want it refused with %q or %q", err, want, alsoWant)
		}

		// The add-on's own writes pass: retained, its expiry writes its first sight.
		framework.WaitJobSet(ctx, t, c, js, jobsetv1alpha2.JobSetCompleted)
		deleteJobSets(ctx, t, c, js)
		framework.Eventually(ctx, t, time.Minute, "first-seen written by the add-on", func(ctx context.Context) (bool, string, error) {
			if err := c.Get(ctx, client.ObjectKeyFromObject(pvc), pvc); err != nil {
				return false, err.Error(), nil
			}
			_, ok := contract.VolumeClaimFirstSeen(pvc)
			return ok, fmt.Sprint(pvc.Annotations), nil
		})
		return ctx
	})
	testenv.Test(t, f)
}

// TestExpiryHeldByJobSetOfItsName: a JobSet re-created under the name of one whose PVC a Retain
// kept, without the policies, mounting that PVC by its claimName and suspended (a queue holds
// it), holds the PVC: it does not expire while that JobSet exists, and does once it is gone.
func TestExpiryHeldByJobSetOfItsName(t *testing.T) {
	f := framework.NamespacedFeature("a JobSet of its name without policies", "holds the retained PVC", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		c := framework.Client(t, cfg)
		ns := framework.NamespaceFrom(ctx)
		js := newJobSet(ns, "held", sharedRetained(expireAfter), replicatedJob("w", 1, 1, "data"))
		framework.CreateAll(ctx, t, c, js)
		uids := waitClaimsBound(ctx, t, c, ns, "held", []string{"data-held"})
		framework.WaitJobSet(ctx, t, c, js, jobsetv1alpha2.JobSetCompleted)
		deleteJobSets(ctx, t, c, js)

		again := newJobSet(ns, "held", "", replicatedJob("w", 1, 1, "data"))
		again.Spec.Suspend = ptr.To(true)
		spec := &again.Spec.ReplicatedJobs[0].Template.Spec.Template.Spec
		spec.Volumes = append(spec.Volumes, corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data-held"}}})
		framework.CreateAll(ctx, t, c, again)

		// Past its expiry (the Unused condition turned True when the pod finished).
		time.Sleep(expireAfter + 15*time.Second)
		var pvc corev1.PersistentVolumeClaim
		if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "data-held"}, &pvc); err != nil || pvc.UID != uids["data-held"] || !pvc.DeletionTimestamp.IsZero() {
			t.Fatalf("the retained PVC expired while the suspended JobSet held mounts it: %v", err)
		}
		if err := c.Delete(ctx, again); err != nil {
			t.Fatal(err)
		}
		waitClaimsGone(ctx, t, c, ns, "held", []string{"data-held"})
		return ctx
	})
	testenv.Test(t, f)
}

// velero is the ServiceAccount of TestRestored's backup tool.
const velero = "system:serviceaccount:velero:velero-server"

// TestRestored: a PVC of the add-on restored from a backup, as Velero restores one (its labels,
// its annotations with an unused-since and a first-seen from a year ago, and its status with an
// Unused condition as old), by the backup tool's ServiceAccount. The reserved-keys policy refuses
// the restore until that ServiceAccount is in admissionPolicies.reservedKeys.exemptUsers; once
// restored, the PVC is not deleted at the first look: the add-on's clock starts at its own first
// sight of the new object, whatever the restored annotations say.
func TestRestored(t *testing.T) {
	f := framework.NamespacedFeature("a PVC restored from a backup", "not expired at the first look", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		c := framework.Client(t, cfg)
		ns := framework.NamespaceFrom(ctx)
		framework.CreateAll(ctx, t, c,
			&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "restore"}, Rules: []rbacv1.PolicyRule{{
				APIGroups: []string{""}, Resources: []string{"persistentvolumeclaims", "persistentvolumeclaims/status"}, Verbs: []string{"create", "get", "patch"}}}},
			&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "velero"},
				RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "restore"},
				Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: velero}}})
		restorer := framework.ClientAs(t, cfg, velero, "system:serviceaccounts", "system:authenticated")

		long := time.Now().Add(-365 * 24 * time.Hour).UTC()
		pvc := &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "data-restored",
				Labels: map[string]string{contract.ManagedByLabelKey: contract.VolumeClaimsManagedByValue, contract.JobSetNameLabelKey: "restored",
					contract.VolumeClaimTemplateLabelKey: "data"},
				Annotations: map[string]string{
					contract.VolumeClaimExpireAfterUnusedAnnotationKey: "1h0m0s",
					contract.VolumeClaimJobSetUIDAnnotationKey:         "uid-of-the-backed-up-jobset",
					contract.VolumeClaimClaimedAtAnnotationKey:         long.Format(time.RFC3339),
					contract.VolumeClaimUnusedSinceAnnotationKey:       long.Format(time.RFC3339),
					contract.VolumeClaimFirstSeenAnnotationKey:         contract.VolumeClaimFirstSeenValue(long, "uid-of-the-backed-up-pvc"),
				}},
			Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany},
				StorageClassName: ptr.To("standard"),
				Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}},
		}
		// The policy as installed by default: the restore is refused, naming a key.
		want := reservedRefusal("metadata.labels[" + contract.ManagedByLabelKey + "]")
		framework.Eventually(ctx, t, 30*time.Second, "the restore refused by the reserved-keys policy", func(ctx context.Context) (bool, string, error) {
			err := restorer.Create(ctx, pvc.DeepCopy())
			if err == nil {
				return false, "restored", c.Delete(ctx, pvc.DeepCopy())
			}
			return strings.Contains(err.Error(), want), err.Error(), nil
		})

		// With the backup tool exempt, as docs/security.md says, it restores.
		exemptBackupTool(ctx, t)
		framework.Eventually(ctx, t, 30*time.Second, "the restore", func(ctx context.Context) (bool, string, error) {
			err := restorer.Create(ctx, pvc)
			return err == nil || apierrors.IsAlreadyExists(err), fmt.Sprint(err), nil
		})
		// Velero restores the status too (restoreStatus): an Unused condition from a year ago.
		framework.Eventually(ctx, t, time.Minute, "the restored status", func(ctx context.Context) (bool, string, error) {
			if err := c.Get(ctx, client.ObjectKeyFromObject(pvc), pvc); err != nil {
				return false, err.Error(), nil
			}
			if pvc.Status.Phase != corev1.ClaimBound {
				return false, string(pvc.Status.Phase), nil
			}
			patch := fmt.Sprintf(`{"status":{"conditions":[{"type":%q,"status":"True","lastTransitionTime":%q}]}}`, corev1.PersistentVolumeClaimUnused, long.Format(time.RFC3339))
			err := restorer.Status().Patch(ctx, pvc.DeepCopy(), client.RawPatch(types.MergePatchType, []byte(patch)))
			return err == nil, fmt.Sprint(err), nil
		})

		// The add-on looks at once (a retained PVC of an expiry, no JobSet of its name): it
		// writes its first sight of this PVC and deletes nothing.
		framework.Eventually(ctx, t, 30*time.Second, "the add-on's first sight of the restored PVC", func(ctx context.Context) (bool, string, error) {
			var got corev1.PersistentVolumeClaim
			if err := c.Get(ctx, client.ObjectKeyFromObject(pvc), &got); err != nil || !got.DeletionTimestamp.IsZero() {
				return false, fmt.Sprintf("deleted: %v", err), fmt.Errorf("the restored PVC was deleted at the first look: %v", err)
			}
			seen, ok := contract.VolumeClaimFirstSeen(&got)
			return ok && seen.After(long), fmt.Sprint(got.Annotations), nil
		})
		time.Sleep(10 * time.Second)
		var got corev1.PersistentVolumeClaim
		if err := c.Get(ctx, client.ObjectKeyFromObject(pvc), &got); err != nil || got.UID != pvc.UID || !got.DeletionTimestamp.IsZero() {
			t.Errorf("the restored PVC was deleted: %v", err)
		}
		return ctx
	})
	testenv.Test(t, f)
}

// exemptBackupTool applies the volumeclaims policies rendered with velero in
// admissionPolicies.reservedKeys.exemptUsers, and the default ones again when the test ends.
func exemptBackupTool(ctx context.Context, t *testing.T) {
	t.Helper()
	tb, err := testbed.DefaultConfig()
	if err != nil {
		t.Fatal(err)
	}
	cs, err := tb.Clientset()
	if err != nil {
		t.Fatal(err)
	}
	exempt, err := tb.RenderChart(ctx, "volumeclaims", "admissionPolicies.reservedKeys.exemptUsers[0]="+velero)
	if err != nil {
		t.Fatal(err)
	}
	defaults, err := tb.RenderChart(ctx, "volumeclaims")
	if err != nil {
		t.Fatal(err)
	}
	if err := testbed.ApplyPolicies(ctx, cs, exempt); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := testbed.ApplyPolicies(context.Background(), cs, defaults); err != nil {
			t.Errorf("applying the default policies again: %v", err)
		}
	})
}

// TestForgedFailedCreate: a FailedCreate Event that the Job controller did not write (a user
// may create Events), on a JobSet's Job and naming its per-pod PVC as a refusal would, moves
// nothing: no PodsRefused on the JobSet. Only kube-controller-manager's job-controller Events
// count (TestPodsRefused shows those told).
func TestForgedFailedCreate(t *testing.T) {
	f := framework.NamespacedFeature("a forged FailedCreate Event", "no PodsRefused", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		c := framework.Client(t, cfg)
		ns := framework.NamespaceFrom(ctx)
		js := newJobSet(ns, "forged", `[{targetReplicatedJobs: [w], templates: [{metadata: {name: ckpt}, spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}}]}]`,
			replicatedJob("w", 1, 1, "ckpt"))
		delay(js, "1h")
		framework.CreateAll(ctx, t, c, js)
		job := &batchv1.Job{}
		framework.Eventually(ctx, t, time.Minute, "the JobSet's Job", func(ctx context.Context) (bool, string, error) {
			err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "forged-w-0"}, job)
			return err == nil, fmt.Sprint(err), nil
		})
		for i, source := range []corev1.EventSource{{}, {Component: "kubectl"}} {
			framework.CreateAll(ctx, t, c, &corev1.Event{
				ObjectMeta:     metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("forged-%d", i)},
				InvolvedObject: corev1.ObjectReference{Kind: "Job", APIVersion: "batch/v1", Namespace: ns, Name: job.Name, UID: job.UID},
				Type:           corev1.EventTypeWarning, Reason: "FailedCreate", Source: source, ReportingController: source.Component,
				Message:        `Error creating: pods "forged-w-0-0-abcde" is forbidden: no PersistentVolumeClaims in this namespace: ckpt-forged-w-0-0`,
				FirstTimestamp: metav1.Now(), LastTimestamp: metav1.Now(), Count: 1,
			})
		}
		time.Sleep(15 * time.Second)
		if msgs, err := framework.EventMessages(ctx, c, js, "PodsRefused"); err != nil || len(msgs) > 0 {
			t.Errorf("PodsRefused on the JobSet after forged Events: %q (%v), want none", msgs, err)
		}
		return ctx
	})
	testenv.Test(t, f)
}
