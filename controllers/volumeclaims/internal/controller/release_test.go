package controller

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
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

// heldPod is a pod of JobSet train (uid) that ran on a node with the PVC claim.
func heldPod(name, uid, claim string, phase corev1.PodPhase) *corev1.Pod {
	p := addontest.Pod("ns", "train", "w", 0, 0).Name(name).UID("pod-"+name).Label(contract.JobSetUIDLabelKey, uid).
		Volume(addontest.ClaimVolume("data", claim)).Obj()
	p.Spec.NodeName = "node-1"
	p.Status = corev1.PodStatus{Phase: phase, ContainerStatuses: []corev1.ContainerStatus{{Name: "main",
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: map[corev1.PodPhase]int32{corev1.PodFailed: 3}[phase], Reason: "Error"}}}}}
	return p
}

// TestRelease: a shared PVC that whenComplete deleted stays Terminating (pvc-protection's
// finalizer) while pods that ran with it exist. With finishedPods Retain the add-on tells so once
// and deletes no pod; with Delete it deletes the JobSet's finished pods that hold it, and no
// other; once the PVC is gone, it tells that too.
func TestRelease(t *testing.T) {
	for _, finishedPods := range []string{"Retain", "Delete"} {
		t.Run(finishedPods, func(t *testing.T) {
			js := jobSet(true).Condition(jobsetv1alpha2.JobSetCompleted).Obj()
			js.Annotations[contract.PoliciesAnnotationKey] = `[{templates: [{metadata: {name: data}, spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}}],
			  retentionPolicy: {whenComplete: Delete, finishedPods: ` + finishedPods + `}}]`
			ps, _, errs := volumeclaims.Parse(js)
			if len(errs) > 0 {
				t.Fatal(errs)
			}
			cs, _ := volumeclaims.Claims(js, ps)
			pvc := cs[0].PVC(js)
			pvc.Finalizers = []string{"kubernetes.io/pvc-protection"}
			objs := []client.Object{js, pvc,
				heldPod("w-0", string(js.UID), "data-train", corev1.PodSucceeded),
				heldPod("w-1", string(js.UID), "data-train", corev1.PodFailed),
				heldPod("old", "uid-0", "data-train", corev1.PodSucceeded), // an earlier JobSet's
				heldPod("other", string(js.UID), "elsewhere", corev1.PodSucceeded),
			}
			scheme := runtime.NewScheme()
			_ = clientgoscheme.AddToScheme(scheme)
			_ = jobsetv1alpha2.AddToScheme(scheme)
			c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).Build()
			rec := events.NewFakeRecorder(100)
			r := &Reconciler{Client: c, Reader: c, Recorder: rec, Workers: 2}
			ctx := context.Background()
			req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(js)}
			for range 3 { // deletes the PVC; then sees it Terminating (twice: told once)
				if _, err := r.Reconcile(ctx, req); err != nil {
					t.Fatal(err)
				}
			}
			exists := func(name string) bool {
				return !apierrors.IsNotFound(c.Get(ctx, types.NamespacedName{Namespace: "ns", Name: name}, &corev1.Pod{}))
			}
			wantGone := map[string]bool{"w-0": finishedPods == "Delete", "w-1": finishedPods == "Delete", "old": false, "other": false}
			for name, gone := range wantGone {
				if exists(name) == gone {
					t.Errorf("pod %s exists: %v, want %v", name, !gone, !gone)
				}
			}
			// pvc-protection lets go once no pod holds it.
			if err := c.Get(ctx, client.ObjectKeyFromObject(pvc), pvc); err != nil {
				t.Fatal(err)
			}
			pvc.Finalizers = nil
			if err := c.Update(ctx, pvc); err != nil {
				t.Fatal(err)
			}
			if _, err := r.Reconcile(ctx, req); err != nil {
				t.Fatal(err)
			}
			close(rec.Events)
			var got []string
			for e := range rec.Events {
				got = append(got, e)
			}
			want := []string{
				"Normal VolumeClaimsDeleted Deleted 1 PersistentVolumeClaims by retention: data-train",
			}
			if finishedPods == "Delete" {
				want = append(want,
					"Normal FinishedPodsDeleted Deleted 2 finished pods that held PersistentVolumeClaims deleted by retention (finishedPods: Delete): w-0 Succeeded, w-1 Failed (main exit 3 Error)",
					"Normal VolumeClaimsHeld 1 PersistentVolumeClaims deleted by retention stay Terminating while pods that ran with them exist (Kubernetes' pvc-protection): data-train (1 pod); ")
			} else {
				want = append(want,
					"Normal VolumeClaimsHeld 1 PersistentVolumeClaims deleted by retention stay Terminating while pods that ran with them exist (Kubernetes' pvc-protection): data-train (3 pods); ")
			}
			want = append(want, "Normal VolumeClaimsReleased 1 PersistentVolumeClaims deleted by retention are gone, their storage released: data-train")
			if len(got) != len(want) {
				t.Fatalf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			for i := range want {
				if !strings.HasPrefix(got[i], want[i]) {
					t.Errorf("event %d: %q\nwant it to start with %q", i, got[i], want[i])
				}
			}
		})
	}
}

func TestOutcome(t *testing.T) {
	p := heldPod("w-1", "u", "c", corev1.PodFailed)
	p.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "init", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{}}}}
	if got, want := Outcome(p), "w-1 Failed (main exit 3 Error)"; got != want {
		t.Errorf("Outcome = %q, want %q", got, want)
	}
}
