package controller

import (
	"context"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// A user's PVC of a shared name, which the add-on's cache never shows, is used as it is: told
// once, and not created again by later reconciles.
func TestUsersClaimToldOnce(t *testing.T) {
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = jobsetv1alpha2.AddToScheme(scheme)
	js := jobSet(true).Obj()
	users := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "data-train"}}
	creates := map[string]int{}
	c := interceptor.NewClient(fake.NewClientBuilder().WithScheme(scheme).WithObjects(js, users).Build(), interceptor.Funcs{
		Create: func(ctx context.Context, cl client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			creates[obj.GetName()]++
			return cl.Create(ctx, obj, opts...)
		},
	})
	rec := events.NewFakeRecorder(100)
	r := &Reconciler{Client: c, Reader: c, Recorder: rec, Workers: 4}
	for range 3 {
		if _, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "train"}}); err != nil {
			t.Fatal(err)
		}
	}
	close(rec.Events)
	reused := 0
	for e := range rec.Events {
		if strings.Contains(e, ReasonReused) {
			reused++
		}
	}
	if creates["data-train"] != 1 || reused != 1 {
		t.Errorf("the user's PVC: %d creates, %d %s Events; want 1 and 1", creates["data-train"], reused, ReasonReused)
	}
}

// A PVC of ours that the cache has not shown for longer than addon.MadeTTL is not taken for a
// user's when its creation collides: nothing is told.
func TestOwnClaimBehindCacheNotReused(t *testing.T) {
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = jobsetv1alpha2.AddToScheme(scheme)
	js := jobSet(true).Obj()
	ours := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "data-train",
		Labels:      map[string]string{contract.ManagedByLabelKey: contract.VolumeClaimsManagedByValue, contract.JobSetNameLabelKey: "train", contract.VolumeClaimTemplateLabelKey: "data"},
		Annotations: map[string]string{contract.VolumeClaimJobSetUIDAnnotationKey: "uid-1"}}}
	server := fake.NewClientBuilder().WithScheme(scheme).WithObjects(js, ours).Build()
	behind := interceptor.NewClient(server, interceptor.Funcs{
		List: func(ctx context.Context, cl client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			if err := cl.List(ctx, list, opts...); err != nil {
				return err
			}
			if pvcs, ok := list.(*corev1.PersistentVolumeClaimList); ok {
				pvcs.Items = slices.DeleteFunc(pvcs.Items, func(p corev1.PersistentVolumeClaim) bool { return p.Name == "data-train" })
			}
			return nil
		},
	})
	rec := events.NewFakeRecorder(100)
	r := &Reconciler{Client: behind, Reader: server, Recorder: rec, Workers: 4}
	if _, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "train"}}); err != nil {
		t.Fatal(err)
	}
	close(rec.Events)
	for e := range rec.Events {
		if strings.Contains(e, ReasonReused) {
			t.Errorf("our own PVC told as reused: %s", e)
		}
	}
	if r.usersOf(client.ObjectKeyFromObject(js), js.UID).Has("data-train") {
		t.Error("our own PVC taken for a user's")
	}
}
