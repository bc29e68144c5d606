package addon

import (
	"context"
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
)

// TestRetries: a JobSet that waited for an object of another JobSet's to go gets the retry
// annotation once that object is deleted (so that JobSet creates its refused Job now), once; a
// JobSet that waited for nothing, or for an object still there, is not written; one whose write
// failed is kept.
func TestRetries(t *testing.T) {
	const key = "example.jobset-addons.io/retry"
	scheme := runtime.NewScheme()
	if err := jobsetv1alpha2.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	js := &jobsetv1alpha2.JobSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "train", UID: "train-uid"}}
	other := &jobsetv1alpha2.JobSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "other", UID: "other-uid"}}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(js, other).Build()
	var w Waiting
	var r Retries
	obj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "train-stage-1"}}
	w.For(client.ObjectKeyFromObject(js), obj)
	w.For(client.ObjectKeyFromObject(other), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "still-there"}})
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer q.ShutDown()
	ctx := context.Background()
	retried := func(name string) string {
		t.Helper()
		got := &jobsetv1alpha2.JobSet{}
		if err := c.Get(ctx, types.NamespacedName{Namespace: "ns", Name: name}, got); err != nil {
			t.Fatal(err)
		}
		return got.Annotations[key]
	}
	retry := func(jss ...*jobsetv1alpha2.JobSet) {
		t.Helper()
		for _, j := range jss {
			if err := r.Retry(ctx, c, j, key); err != nil {
				t.Fatal(err)
			}
		}
	}

	retry(js, other)
	if v, o := retried(js.Name), retried(other.Name); v != "" || o != "" {
		t.Fatalf("retry annotations %q, %q before any object went; want none", v, o)
	}

	w.Gone(r.Add).Delete(ctx, event.DeleteEvent{Object: obj}, q)
	if q.Len() != 1 {
		t.Fatalf("%d reconciles queued, want 1 (JobSet train)", q.Len())
	}
	retry(js, other)
	v := retried(js.Name)
	if _, err := time.Parse(time.RFC3339Nano, v); err != nil {
		t.Errorf("JobSet train's retry annotation %q: want a time: %v", v, err)
	}
	if o := retried(other.Name); o != "" {
		t.Errorf("JobSet other, whose object is still there, got the retry annotation %q", o)
	}
	// Once: the next reconcile does not write again.
	retry(js)
	if again := retried(js.Name); again != v {
		t.Errorf("retry annotation written again (%q, then %q)", v, again)
	}

	// A write that fails: the JobSet is kept, for the reconcile's retry.
	failing := fake.NewClientBuilder().WithScheme(scheme).WithObjects(other).WithInterceptorFuncs(interceptor.Funcs{
		Patch: func(context.Context, client.WithWatch, client.Object, client.Patch, ...client.PatchOption) error {
			return errors.New("the API server is away")
		},
	}).Build()
	r.Add(reconcile.Request{NamespacedName: client.ObjectKeyFromObject(other)})
	if err := r.Retry(ctx, failing, other, key); err == nil {
		t.Errorf("Retry with a failing write: no error")
	}
	if !r.Forget(client.ObjectKeyFromObject(other)) {
		t.Errorf("a JobSet whose nudge failed is not kept for the reconcile's retry")
	}
}
