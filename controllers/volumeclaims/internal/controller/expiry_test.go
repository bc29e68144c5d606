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

	"github.com/jobset-addons/jobset-addons/pkg/addon/addontest"
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

// countingReader counts the lists made through it: the API server's, in the add-on.
type countingReader struct {
	client.Reader
	lists int
}

func (r *countingReader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	r.lists++
	return r.Reader.List(ctx, list, opts...)
}

// expiryFixture is an Expiry on a fake client with the production pod index; its Reader (the
// API server's) counts its lists.
func expiryFixture(t *testing.T, now *time.Time, objs ...client.Object) (*Expiry, client.Client, *countingReader) {
	t.Helper()
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = jobsetv1alpha2.AddToScheme(scheme)
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).WithIndex(&corev1.Pod{}, PodClaimIndex, claimsOfPod).Build()
	api := &countingReader{Reader: c}
	return &Expiry{Client: c, Reader: api, Recorder: events.NewFakeRecorder(100), Now: func() time.Time { return *now }}, c, api
}

// unusedSince gives pvc Kubernetes' Unused condition, True since t.
func unusedSince(pvc *corev1.PersistentVolumeClaim, t time.Time) *corev1.PersistentVolumeClaim {
	pvc.Status.Conditions = []corev1.PersistentVolumeClaimCondition{{Type: corev1.PersistentVolumeClaimUnused, Status: corev1.ConditionTrue,
		LastTransitionTime: metav1.NewTime(t)}}
	return pvc
}

// seenAt marks pvc as first seen by the add-on at t.
func seenAt(pvc *corev1.PersistentVolumeClaim, t time.Time) *corev1.PersistentVolumeClaim {
	pvc.Annotations[contract.VolumeClaimFirstSeenAnnotationKey] = contract.VolumeClaimFirstSeenValue(t, pvc.UID)
	return pvc
}

func getPVC(t *testing.T, c client.Client, name string) *corev1.PersistentVolumeClaim {
	t.Helper()
	var pvc corev1.PersistentVolumeClaim
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: name}, &pvc); err != nil {
		t.Fatal(err)
	}
	return &pvc
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
// it; a PVC without the add-on's label is never touched. It finds the pods that use the PVC in
// its cache (PodClaimIndex): the API server is asked once, just before the delete.
func TestExpiryOwnClock(t *testing.T) {
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	user := expiringPVC("mine", false)
	e, c, api := expiryFixture(t, &now, seenAt(expiringPVC("data-train", true), now), user)

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
	if api.lists != 0 {
		t.Errorf("%d lists from the API server while the clock ran, want none (the cache's index)", api.lists)
	}
	now = now.Add(31 * time.Minute)
	reconcileExpiry(t, e, "data-train")
	if exists(t, c, "data-train") {
		t.Error("not deleted once unused for longer than its expiry")
	}
	if api.lists != 1 {
		t.Errorf("%d lists from the API server, want 1: the look just before the delete", api.lists)
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
	pvc := unusedSince(expiringPVC("data-train", true), now.Add(-2*time.Hour))
	js := jobSet(true).Obj()
	js.Annotations[contract.PoliciesAnnotationKey] = "[]"
	e, c, _ := expiryFixture(t, &now, seenAt(pvc, now.Add(-3*time.Hour)), js)
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

// TestExpiryHeldByAnyJobSetOfItsName: a JobSet of the PVC's name holds it whether or not it
// carries the policies (a re-created JobSet may mount the retained PVC by its claimName, and be
// suspended); once it is gone, the PVC expires.
func TestExpiryHeldByAnyJobSetOfItsName(t *testing.T) {
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	pvc := unusedSince(expiringPVC("data-train", true), now.Add(-2*time.Hour))
	js := addontest.JobSet("ns", "train").UID("uid-2").Suspend(true).ReplicatedJobs(addontest.ReplicatedJob("w")).Obj()
	e, c, _ := expiryFixture(t, &now, seenAt(pvc, now.Add(-3*time.Hour)), js)
	reconcileExpiry(t, e, "data-train")
	if !exists(t, c, "data-train") {
		t.Fatal("expired while a suspended JobSet of its name, without policies, exists")
	}
	if err := c.Delete(context.Background(), js); err != nil {
		t.Fatal(err)
	}
	reconcileExpiry(t, e, "data-train")
	if exists(t, c, "data-train") {
		t.Fatal("not expired once the JobSet of its name is gone")
	}
}

// TestExpiryRestored: a PVC restored from a backup carries an unused-since, and a first-seen,
// from long ago, but it is a new object (a new UID): the first look writes the add-on's first
// sight of it and deletes nothing; it expires its expireAfterUnused after that first sight.
func TestExpiryRestored(t *testing.T) {
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	long := now.Add(-365 * 24 * time.Hour)
	pvc := expiringPVC("data-train", true)
	pvc.Annotations[contract.VolumeClaimUnusedSinceAnnotationKey] = long.Format(time.RFC3339)
	pvc.Annotations[contract.VolumeClaimClaimedAtAnnotationKey] = long.Format(time.RFC3339)
	pvc.Annotations[contract.VolumeClaimFirstSeenAnnotationKey] = contract.VolumeClaimFirstSeenValue(long, "uid-of-the-backed-up-pvc")
	e, c, _ := expiryFixture(t, &now, pvc)

	reconcileExpiry(t, e, "data-train")
	reconcileExpiry(t, e, "data-train")
	if !exists(t, c, "data-train") {
		t.Fatal("a restored PVC deleted at the first look")
	}
	if got, want := getPVC(t, c, "data-train").Annotations[contract.VolumeClaimFirstSeenAnnotationKey], contract.VolumeClaimFirstSeenValue(now, pvc.UID); got != want {
		t.Errorf("first-seen = %q, want %q", got, want)
	}
	now = now.Add(59 * time.Minute)
	reconcileExpiry(t, e, "data-train")
	if !exists(t, c, "data-train") {
		t.Fatal("deleted before its expiry passed since the first sight")
	}
	now = now.Add(2 * time.Minute)
	reconcileExpiry(t, e, "data-train")
	if exists(t, c, "data-train") {
		t.Fatal("not deleted once its expiry passed since the first sight")
	}
}
