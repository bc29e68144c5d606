package controller

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/pkg/addon/addontest"
	"github.com/jobset-addons/jobset-addons/pkg/addon/checks/volumeclaims"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

const policies = `[{templates: [{metadata: {name: data}, spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}}], retentionPolicy: {whenComplete: Delete}},
 {targetReplicatedJobs: [w], templates: [{metadata: {name: ckpt}, spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}}]}]`

// jobSet is JobSet ns/train of ReplicatedJob w (2 Jobs of 2 completions) that mounts the
// policies' shared data and per-pod ckpt, admitted by the webhook or not.
func jobSet(admitted bool) *addontest.JobSetWrapper {
	w := addontest.JobSet("ns", "train").UID("uid-1").VolumeClaimsPolicies(policies).ReplicatedJobs(
		addontest.ReplicatedJob("w").Replicas(2).Completions(2).Mount("data", "ckpt"),
	)
	if admitted {
		w.VolumeClaimsAdmitted()
	}
	return w
}

func run(t *testing.T, objs ...client.Object) ([]string, []string) {
	t.Helper()
	claims, reasons, err := runErr(t, objs...)
	if err != nil {
		t.Fatal(err)
	}
	return claims, reasons
}

// runErr reconciles JobSet ns/train once among objs, and returns the PVCs there are then,
// the Events, and the reconcile's error.
func runErr(t *testing.T, objs ...client.Object) ([]string, []string, error) {
	t.Helper()
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = jobsetv1alpha2.AddToScheme(scheme)
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).WithStatusSubresource(&jobsetv1alpha2.JobSet{}).Build()
	rec := events.NewFakeRecorder(100)
	r := &Reconciler{Client: c, Reader: c, Recorder: rec, Workers: 4}
	_, rerr := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "train"}})
	var pvcs corev1.PersistentVolumeClaimList
	if err := c.List(context.Background(), &pvcs); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range pvcs.Items {
		names = append(names, p.Name)
	}
	close(rec.Events)
	var reasons []string
	for e := range rec.Events {
		reasons = append(reasons, e)
	}
	return names, reasons, rerr
}

func TestReconcile(t *testing.T) {
	all := []string{"ckpt-train-w-0-0", "ckpt-train-w-0-1", "ckpt-train-w-1-0", "ckpt-train-w-1-1", "data-train"}
	cases := map[string]struct {
		objs        []client.Object
		wantClaims  []string
		wantReasons []string
		wantErr     string
	}{
		"admitted: every PVC created": {
			objs:        []client.Object{jobSet(true).Obj()},
			wantClaims:  all,
			wantReasons: []string{"Normal VolumeClaimsCreated Created 5 PersistentVolumeClaims: "},
		},
		"admitted before the webhook ran: nothing created, a warning": {
			objs:        []client.Object{jobSet(false).Obj()},
			wantReasons: []string{"Warning NotAdmitted "},
		},
		"completed: nothing created": {
			objs: []client.Object{jobSet(true).Condition(jobsetv1alpha2.JobSetCompleted).Obj()},
		},
		"completed: shared PVC with whenComplete Delete deleted, per-pod kept": {
			objs: func() []client.Object {
				js := jobSet(true).Condition(jobsetv1alpha2.JobSetCompleted).Obj()
				objs := []client.Object{js}
				ps, _, _ := volumeclaims.Parse(js)
				claims, _ := volumeclaims.Claims(js, ps)
				for _, c := range claims {
					objs = append(objs, c.PVC(js))
				}
				return objs
			}(),
			wantClaims:  all[:4],
			wantReasons: []string{"Normal VolumeClaimsDeleted Deleted 1 PersistentVolumeClaims by retention: data-train"},
		},
		"a user's PVC of the shared name is neither deleted nor relabelled": {
			objs:       []client.Object{jobSet(true).Condition(jobsetv1alpha2.JobSetCompleted).Obj(), &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "data-train"}}},
			wantClaims: []string{"data-train"},
		},
		"another JobSet's PVC of a per-pod name (JobSet train-w-0-0's shared ckpt): neither mounted nor adopted, told": {
			objs: []client.Object{jobSet(true).Obj(), &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{
				Namespace: "ns", Name: "ckpt-train-w-0-0",
				Labels: map[string]string{
					contract.ManagedByLabelKey: contract.VolumeClaimsManagedByValue, contract.JobSetNameLabelKey: "train-w-0-0",
					contract.VolumeClaimTemplateLabelKey: "ckpt",
				},
				Annotations: map[string]string{contract.VolumeClaimJobSetUIDAnnotationKey: "uid-other"},
			}}},
			wantClaims: all,
			wantReasons: []string{
				"Normal VolumeClaimsCreated Created 4 PersistentVolumeClaims: ",
				"Warning VolumeClaimNameTaken 1 PersistentVolumeClaims of this JobSet's names exist and are not this JobSet's, so they are not mounted, changed or deleted, and the pods that mount them wait: PersistentVolumeClaim ckpt-train-w-0-0 (template ckpt) was made for JobSet train-w-0-0 (uid uid-other) for template=ckpt.",
			},
			wantErr: "PersistentVolumeClaim ckpt-train-w-0-0 (template ckpt) was made for JobSet train-w-0-0 (uid uid-other) for template=ckpt",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			claims, reasons, err := runErr(t, tc.objs...)
			if got := fmt.Sprint(err); tc.wantErr != "" && got != tc.wantErr || tc.wantErr == "" && err != nil {
				t.Errorf("error %v, want %q", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.wantClaims, claims); diff != "" {
				t.Errorf("PVCs (-want +got):\n%s", diff)
			}
			if len(reasons) != len(tc.wantReasons) {
				t.Fatalf("events %q, want %q", reasons, tc.wantReasons)
			}
			for i, want := range tc.wantReasons {
				if len(reasons[i]) < len(want) || reasons[i][:len(want)] != want {
					t.Errorf("event %q, want it to start with %q", reasons[i], want)
				}
			}
		})
	}
}

// TestAction is the retention table.
func TestAction(t *testing.T) {
	del, keepR := contract.RetentionPolicyDelete, contract.RetentionPolicyRetain
	shared := volumeclaims.Claim{Name: "s", Retention: contract.VolumeRetentionPolicy{WhenComplete: del, WhenFailed: keepR, WhenDeleted: del}}
	perPod := volumeclaims.Claim{Name: "p", ReplicatedJob: "w", Targets: []string{"w", "v"}, Retention: contract.VolumeRetentionPolicy{WhenComplete: del, WhenFailed: del}}
	cases := map[string]struct {
		st   state
		c    volumeclaims.Claim
		want action
	}{
		"running: shared kept":                   {st: state{}, c: shared, want: keep},
		"completed: shared deleted":              {st: state{completed: true}, c: shared, want: drop},
		"failed, whenFailed Retain: shared left": {st: state{failed: true}, c: shared, want: leave},
		"one target done: per-pod kept":          {st: state{succeeded: set("w")}, c: perPod, want: keep},
		"all targets done: per-pod deleted":      {st: state{succeeded: set("w", "v")}, c: perPod, want: drop},
		"failed for good: per-pod deleted":       {st: state{failed: true, succeeded: set("w")}, c: perPod, want: drop},
		"restarting (not Failed): per-pod kept":  {st: state{}, c: perPod, want: keep},
		"completed, per-pod Retain: left":        {st: state{completed: true}, c: volumeclaims.Claim{ReplicatedJob: "w", Targets: []string{"w"}}, want: leave},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if tc.st.succeeded == nil {
				tc.st.succeeded = set()
			}
			if got := tc.st.action(tc.c); got != tc.want {
				t.Errorf("action = %v, want %v", got, tc.want)
			}
		})
	}
}

func set(names ...string) sets.Set[string] { return sets.New(names...) }

// TestDeletedClaimCreatedAgain: a PVC of ours that someone deletes while the JobSet runs is
// created again, and reconciles that change nothing emit nothing.
func TestDeletedClaimCreatedAgain(t *testing.T) {
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = jobsetv1alpha2.AddToScheme(scheme)
	js := jobSet(true).Obj()
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(js).Build()
	rec := events.NewFakeRecorder(100)
	r := &Reconciler{Client: c, Recorder: rec, Workers: 4}
	ctx := context.Background()
	req := ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "train"}}
	for range 2 {
		if _, err := r.Reconcile(ctx, req); err != nil {
			t.Fatal(err)
		}
	}
	victim := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "ckpt-train-w-1-0"}}
	if err := c.Delete(ctx, victim); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(victim), victim); err != nil {
		t.Fatalf("the deleted PVC was not created again: %v", err)
	}
	close(rec.Events)
	var got []string
	for e := range rec.Events {
		got = append(got, e)
	}
	if len(got) != 2 || got[1] != "Normal VolumeClaimsCreated Created 1 PersistentVolumeClaims: ckpt-train-w-1-0" {
		t.Errorf("events %q, want the first creation and then one PVC created again", got)
	}
}
