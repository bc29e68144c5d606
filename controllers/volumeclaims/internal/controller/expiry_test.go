package controller

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// expiringPVC is a Bound PVC of the add-on for JobSet train, with a 1h expiry.
func expiringPVC(name string, managed bool) *corev1.PersistentVolumeClaim {
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: "uid-" + types.UID(name),
			Labels:      map[string]string{contract.JobSetNameLabelKey: "train"},
			Annotations: map[string]string{contract.VolumeClaimExpireAfterUnusedAnnotationKey: "1h0m0s"}},
		Spec:   corev1.PersistentVolumeClaimSpec{Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}},
		Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound},
	}
	if managed {
		pvc.Labels[contract.ManagedByLabelKey] = contract.VolumeClaimsManagedByValue
	}
	return pvc
}

func expiryFixture(t *testing.T, now *time.Time, objs ...client.Object) (*Expiry, client.Client) {
	t.Helper()
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = jobsetv1alpha2.AddToScheme(scheme)
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).Build()
	return &Expiry{Client: c, Reader: c, Recorder: events.NewFakeRecorder(100), Now: func() time.Time { return *now }}, c
}

func reconcileExpiry(t *testing.T, e *Expiry, name string) ctrl.Result {
	t.Helper()
	res, err := e.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKey{Namespace: "ns", Name: name}})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func exists(t *testing.T, c client.Client, name string) bool {
	t.Helper()
	err := c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: name}, &corev1.PersistentVolumeClaim{})
	return client.IgnoreNotFound(err) == nil && err == nil
}

// TestExpiryOwnClock: where Kubernetes sets no Unused condition, the add-on writes since when
// it saw no pod use the PVC, deletes it once the expiry has passed, and never while a pod uses
// it; a PVC without the add-on's label is never touched.
func TestExpiryOwnClock(t *testing.T) {
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	user := expiringPVC("mine", false)
	e, c := expiryFixture(t, &now, expiringPVC("data-train", true), user)

	if res := reconcileExpiry(t, e, "data-train"); res.RequeueAfter == 0 {
		t.Errorf("no look again after the clock started: %+v", res)
	}
	var pvc corev1.PersistentVolumeClaim
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "data-train"}, &pvc); err != nil {
		t.Fatal(err)
	}
	if got := pvc.Annotations[contract.VolumeClaimUnusedSinceAnnotationKey]; got != now.Format(time.RFC3339) {
		t.Fatalf("unused-since = %q, want %s", got, now.Format(time.RFC3339))
	}

	// A pod uses it: the clock stops.
	now = now.Add(2 * time.Hour)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}, Spec: corev1.PodSpec{Volumes: []corev1.Volume{{Name: "d",
		VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data-train"}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	if err := c.Create(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	reconcileExpiry(t, e, "data-train")
	if !exists(t, c, "data-train") {
		t.Fatal("deleted while a pod uses it")
	}
	// The pod finished: the clock starts again, from now.
	if err := c.Delete(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	pod = pod.DeepCopy()
	pod.ResourceVersion, pod.Status.Phase = "", corev1.PodSucceeded
	if err := c.Create(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	reconcileExpiry(t, e, "data-train")
	now = now.Add(30 * time.Minute)
	if res := reconcileExpiry(t, e, "data-train"); !exists(t, c, "data-train") || res.RequeueAfter != ownClockRecheck {
		t.Fatalf("after 30 of 60 minutes: exists %v, look again in %v; want kept, %v", exists(t, c, "data-train"), res.RequeueAfter, ownClockRecheck)
	}
	now = now.Add(31 * time.Minute)
	reconcileExpiry(t, e, "data-train")
	if exists(t, c, "data-train") {
		t.Error("not deleted once unused for longer than its expiry")
	}

	now = now.Add(24 * time.Hour)
	reconcileExpiry(t, e, "mine")
	reconcileExpiry(t, e, "mine")
	if !exists(t, c, "mine") {
		t.Error("a PVC without the add-on's label was deleted")
	}
}

// TestExpiryWaitsForItsJobSet: while the JobSet of the PVC's name runs, its PVCs never expire;
// once it completed, they do.
func TestExpiryWaitsForItsJobSet(t *testing.T) {
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	pvc := expiringPVC("data-train", true)
	pvc.Status.Conditions = []corev1.PersistentVolumeClaimCondition{{Type: corev1.PersistentVolumeClaimUnused, Status: corev1.ConditionTrue,
		LastTransitionTime: metav1.NewTime(now.Add(-2 * time.Hour))}}
	js := jobSet(true).Obj()
	js.Annotations[contract.PoliciesAnnotationKey] = "[]"
	e, c := expiryFixture(t, &now, pvc, js)
	reconcileExpiry(t, e, "data-train")
	if !exists(t, c, "data-train") {
		t.Fatal("expired while its JobSet runs")
	}
	js.Status.Conditions = []metav1.Condition{{Type: string(jobsetv1alpha2.JobSetCompleted), Status: metav1.ConditionTrue, Reason: "Done", LastTransitionTime: metav1.NewTime(now)}}
	if err := c.Status().Update(context.Background(), js); err != nil {
		if err := c.Update(context.Background(), js); err != nil {
			t.Fatal(err)
		}
	}
	reconcileExpiry(t, e, "data-train")
	if exists(t, c, "data-train") {
		t.Fatal("not expired once its JobSet completed")
	}
}
