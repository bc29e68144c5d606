package volumeclaims_test

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/jobset-addons/jobset-addons/e2e/framework"
)

// TestMayChangeAdmittedWithWarning: a PVC the API server does not accept for a reason that may
// change (the namespace's quota, its LimitRange) does not refuse the JobSet: it is admitted,
// with the dry run's answer as a Warning. A StorageClass that does not exist is no reason to
// refuse either; the API server accepts such a PVC, so nothing is said (the PVC waits Pending).
func TestMayChangeAdmittedWithWarning(t *testing.T) {
	quota := func(hard corev1.ResourceList) func(ns string) client.Object {
		return func(ns string) client.Object {
			return &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "q"}, Spec: corev1.ResourceQuotaSpec{Hard: hard}}
		}
	}
	for _, tc := range []struct {
		name        string
		object      func(ns string) client.Object
		spec        string
		wantWarning string // "" for none
	}{
		{name: "quota on the PVC count", object: quota(corev1.ResourceList{corev1.ResourcePersistentVolumeClaims: resource.MustParse("0")}),
			spec: `{accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}`, wantWarning: "exceeded quota: q"},
		{name: "quota on requests.storage", object: quota(corev1.ResourceList{corev1.ResourceRequestsStorage: resource.MustParse("1Mi")}),
			spec: `{accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}`, wantWarning: "exceeded quota: q"},
		{name: "LimitRange on PVC storage", object: func(ns string) client.Object {
			return &corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "l"}, Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{
				Type: corev1.LimitTypePersistentVolumeClaim, Max: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			}}}}
		}, spec: `{accessModes: [ReadWriteOnce], resources: {requests: {storage: 2Gi}}}`, wantWarning: "maximum storage usage per PersistentVolumeClaim is 1Gi"},
		{name: "StorageClass that does not exist", spec: `{accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}, storageClassName: not-there}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := framework.NamespacedFeature(tc.name, "admitted, with a Warning", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
				c := framework.Client(t, cfg)
				ns := framework.NamespaceFrom(ctx)
				if tc.object != nil {
					obj := tc.object(ns)
					if q, ok := obj.(*corev1.ResourceQuota); ok {
						framework.CreateQuota(ctx, t, c, q)
					} else {
						framework.CreateAll(ctx, t, c, obj)
					}
				}
				js := newJobSet(ns, "maychange", withSpec(tc.spec), replicatedJob("a", 1, 1, "data"))
				delay(js, "1h")
				warnings := framework.CreateWithWarnings(ctx, t, cfg, js)
				framework.ExpectDryRunWarning(t, warnings, "volumeclaims: the PersistentVolumeClaim data-maychange of "+tp+" was not accepted by a dry run, for a reason that may change", tc.wantWarning)
				return ctx
			})
			testenv.Test(t, f)
		})
	}
}

// TestRefusedAfterAdmission: a JobSet admitted whose PVCs the API server then refuses for good —
// here a ValidatingAdmissionPolicy that lets dry runs through and refuses real creates, as a
// template refused after an upgrade would be — does not wait in silence: one
// VolumeClaimsRefused Warning, not one per retry; kubectl jobset-addons status shows it; the
// JobSet is left as it is.
func TestRefusedAfterAdmission(t *testing.T) {
	label := framework.RefuseLabel
	f := framework.NamespacedFeature("refused after admission", "told once, shown by status", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		c := framework.Client(t, cfg)
		ns := framework.NamespaceFrom(ctx)
		framework.RefuseRealCreates(ctx, t, c, "", "persistentvolumeclaims", ns, func() client.Object {
			return &corev1.PersistentVolumeClaim{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "probe", Labels: map[string]string{label: ns}},
				Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}},
			}
		})
		js := newJobSet(ns, "later", `[{templates: [{metadata: {name: data, labels: {`+label+`: `+ns+`}}, spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}}]}]`,
			replicatedJob("a", 1, 1, "data"))
		framework.CreateAll(ctx, t, c, js) // admitted: the dry run passes the policy
		framework.ExpectRefusedOnce(ctx, t, cfg, c, js, "VolumeClaimsRefused", "VolumeClaimsFailed", "template data")
		return ctx
	})
	testenv.Test(t, f)
}
