package controller

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	volcanov1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/jobset-addons/jobset-addons/pkg/addon"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// TestGangNameTaken: JobSet js is sequenced (upstream dependsOn); the PodGroup of its stage 1,
// js-stage-1, is JobSet js-stage-1's, made after js was admitted. Before stage 1 may run (its
// Jobs are held by the Job webhook, so it never may while the name is taken) js is told once,
// naming the PodGroup and JobSet js-stage-1, and requeued; the PodGroup is left alone. Its
// deletion reconciles js, which makes its own PodGroup and has JobSet retry the held Jobs at once
// (PodGroupsRetryAnnotationKey, written once); nothing more is told and nothing is requeued for
// it.
func TestGangNameTaken(t *testing.T) {
	js := admitted(t, twoStages(map[string]string{contract.SchedulerAnnotationKey: "volcano"}, true).Obj())
	other := &volcanov1beta1.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "js-stage-1",
		Labels:          map[string]string{contract.ManagedByLabelKey: contract.PodGroupsManagedByValue, contract.JobSetNameLabelKey: "js-stage-1"},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "jobset.x-k8s.io/v1alpha2", Kind: "JobSet", Name: "js-stage-1", UID: "uid-other", Controller: ptr.To(true)}},
	}, Spec: volcanov1beta1.PodGroupSpec{MinMember: 3}}
	all := installedAll()
	c := fakeCluster(t, all, schema.GroupVersionKind{}, js, other)
	rec := events.NewFakeRecorder(100)
	clock := clocktesting.NewFakeClock(start)
	r := &Reconciler{Client: c, APIReader: c, Backends: registry, Recorder: rec, Clock: clock, Installed: all, DefaultQueue: "default",
		deleted: &addon.Changed{TTL: addon.MadeTTL, Clock: clock}}
	reconcileJS := func() ctrl.Result {
		t.Helper()
		res, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "js"}})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	for range 2 {
		if res := reconcileJS(); res.RequeueAfter != TakenRequeue {
			t.Errorf("requeued after %v while taken, want %v", res.RequeueAfter, TakenRequeue)
		}
	}
	if diff := cmp.Diff(state{PodGroups: map[string]int32{"js-stage-0": 2, "js-stage-1": 3}}, read(t, c)); diff != "" {
		t.Errorf("objects (-want +got):\n%s", diff)
	}
	retried := func() string {
		t.Helper()
		got := &jobsetv1alpha2.JobSet{}
		if err := c.Get(context.Background(), client.ObjectKeyFromObject(js), got); err != nil {
			t.Fatal(err)
		}
		return got.Annotations[contract.PodGroupsRetryAnnotationKey]
	}
	if v := retried(); v != "" {
		t.Errorf("retry annotation %q while the PodGroup is taken, want none", v)
	}
	if err := c.Delete(context.Background(), other); err != nil {
		t.Fatal(err)
	}
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer q.ShutDown()
	r.waiting.Gone(r.retry.Add).Delete(context.Background(), event.DeleteEvent{Object: other}, q)
	if req, _ := q.Get(); q.Len() != 0 || req.Name != "js" {
		t.Errorf("the PodGroup's deletion reconciles %v (and %d more), want JobSet js", req, q.Len())
	}
	if res := reconcileJS(); res.RequeueAfter != 0 {
		t.Errorf("requeued after %v once the PodGroup is gone, want not", res.RequeueAfter)
	}
	v := retried()
	if _, err := time.Parse(time.RFC3339Nano, v); err != nil {
		t.Errorf("retry annotation %q once the PodGroup is gone: want a time: %v", v, err)
	}
	reconcileJS()
	if again := retried(); again != v {
		t.Errorf("retry annotation written again (%q, then %q)", v, again)
	}
	close(rec.Events)
	var got []string
	for e := range rec.Events {
		got = append(got, e)
	}
	want := []string{
		"Warning PodGroupNameTaken The volcano PodGroup js-stage-1 exists and was made for JobSet js-stage-1 (uid uid-other), held by JobSet js-stage-1, not for this JobSet " +
			`(names are joined with "-", so two JobSets can give the same one): rename the JobSet, the ReplicatedJob or the template, or delete it if its data is not needed. ` +
			"It is left alone, and the Jobs whose pods it would gang are held (not created or resumed) until it is gone; then the gang is made and the Jobs go on",
		"Normal PodGroupCreated Created volcano PodGroup js-stage-0: minMember 2, minResources none",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}
