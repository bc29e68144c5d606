package controller

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/pkg/addon/addontest"
)

// TestRefusedToldOnce: PVCs the API server refuses for good (here the per-pod ckpt template's,
// as after an upgrade that no longer accepts it) are told of in one Warning per template and
// cause, on the first reconcile only; every reconcile returns an error, for the back-off; the
// others are made. A failure that may change (quota) is told as before, on every retry.
func TestRefusedToldOnce(t *testing.T) {
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = jobsetv1alpha2.AddToScheme(scheme)
	quota := true
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(jobSet(true).Obj()).WithInterceptorFuncs(interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			switch {
			case strings.HasPrefix(obj.GetName(), "ckpt-"):
				return apierrors.NewInvalid(schema.GroupKind{Kind: "PersistentVolumeClaim"}, obj.GetName(), field.ErrorList{
					field.Invalid(field.NewPath("spec", "resources").Key("storage"), "-1Gi", "must be greater than zero"),
				})
			case quota:
				return apierrors.NewForbidden(schema.GroupResource{Resource: "persistentvolumeclaims"}, obj.GetName(), errors.New("exceeded quota: q"))
			}
			return c.Create(ctx, obj, opts...)
		},
	}).Build()
	rec := events.NewFakeRecorder(100)
	r := &Reconciler{Client: c, Recorder: rec, Workers: 4}
	req := ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "train"}}
	for i := range 3 {
		if i == 2 {
			quota = false
		}
		if _, err := r.Reconcile(context.Background(), req); err == nil || !strings.Contains(err.Error(), "refuses PersistentVolumeClaims: template ckpt") {
			t.Errorf("reconcile %d: %v, want the refusal as an error", i, err)
		}
	}
	close(rec.Events)
	counts := map[string]int{}
	for e := range rec.Events {
		counts[strings.Fields(e)[1]]++
		if strings.Contains(e, ReasonRefused) && !strings.Contains(e, `template ckpt (4, such as ckpt-train-w-`) {
			t.Errorf("event %q", e)
		}
	}
	want := map[string]int{ReasonRefused: 1, ReasonFailed: 2, ReasonCreated: 1}
	for reason, n := range want {
		if counts[reason] != n {
			t.Errorf("events %v, want %v", counts, want)
			break
		}
	}
	var pvcs corev1.PersistentVolumeClaimList
	if err := c.List(context.Background(), &pvcs); err != nil || len(pvcs.Items) != 1 {
		t.Errorf("%d PVCs (%v), want data-train alone", len(pvcs.Items), err)
	}
}

// TestNamespaceTerminating: PVCs the API server refuses because the JobSet's namespace is being
// deleted are not a failure: no error (no retry), no Event, nothing made; the next reconcile
// (an event of the namespace's deletion) tries again, once each.
func TestNamespaceTerminating(t *testing.T) {
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = jobsetv1alpha2.AddToScheme(scheme)
	tried := 0
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(jobSet(true).Obj()).WithInterceptorFuncs(interceptor.Funcs{
		Create: addontest.NamespaceTerminatingCreate(func(client.Object) { tried++ }),
	}).Build()
	rec := events.NewFakeRecorder(100)
	r := &Reconciler{Client: c, Recorder: rec, Workers: 4}
	req := ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "train"}}
	perReconcile := 0
	for i := range 2 {
		res, err := r.Reconcile(context.Background(), req)
		if err != nil || !res.IsZero() {
			t.Fatalf("reconcile %d: %+v, %v; want nothing to retry", i, res, err)
		}
		if i == 0 {
			perReconcile = tried
		}
	}
	if perReconcile == 0 || tried != 2*perReconcile {
		t.Errorf("%d creates tried in two reconciles, %d in the first: want each PVC tried once a reconcile", tried, perReconcile)
	}
	close(rec.Events)
	for e := range rec.Events {
		t.Errorf("event %q, want none", e)
	}
}
