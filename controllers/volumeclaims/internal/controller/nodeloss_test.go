package controller

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/pkg/addon/addontest"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// TestNodeLossDecisions runs NodeLoss on a JobSet whose one pod mounts a per-pod PVC on a local
// PV pinned to hostname gpu-7.example.internal, node gpu-7's label, and says what it gives up:
// the PVC and the pod (deleted, with grace 0), or nothing, and which Event it tells.
func TestNodeLossDecisions(t *testing.T) {
	t0 := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	outOfService := corev1.Taint{Key: corev1.TaintNodeOutOfService, Value: "nodeshutdown", Effect: corev1.TaintEffectNoExecute}
	unreachable := corev1.Taint{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoExecute, TimeAdded: &metav1.Time{Time: t0.Add(-time.Hour)}}
	refuse := interceptor.Funcs{Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
		if _, ok := obj.(*corev1.Pod); ok {
			return apierrors.NewInvalid(schema.GroupKind{Kind: "Pod"}, obj.GetName(), nil)
		}
		return c.Delete(ctx, obj, opts...)
	}}
	cases := map[string]struct {
		retention  string
		node       *corev1.Node
		refuse     bool
		step       time.Duration // looked at again after this, if not 0
		wantGone   bool          // the PVC and the pod deleted
		wantReason string
	}{
		"Ready, named otherwise than its hostname: nothing": {
			retention: "whenNodeLost: Recreate", node: node("gpu-7", "gpu-7.example.internal", corev1.ConditionTrue)},
		"deleted: Recreate": {
			retention: "whenNodeLost: Recreate", wantGone: true, wantReason: ReasonNodeLost},
		"deleted, Keep: told": {
			retention: "whenNodeLost: Keep", wantReason: ReasonNodeLostKept},
		"out of service: Recreate at once": {
			retention: "whenNodeLost: Recreate", node: node("gpu-7", "gpu-7.example.internal", corev1.ConditionUnknown, unreachable, outOfService), wantGone: true, wantReason: ReasonNodeLost},
		"unreachable within the grace on the add-on's clock: nothing": {
			retention: "whenNodeLost: Recreate, whenNodeUnreachable: Recreate, nodeLostGracePeriod: 1m",
			node:      node("gpu-7", "gpu-7.example.internal", corev1.ConditionUnknown, unreachable), step: 59 * time.Second},
		"unreachable past the grace: told, data kept": {
			retention: "whenNodeLost: Recreate, nodeLostGracePeriod: 1m",
			node:      node("gpu-7", "gpu-7.example.internal", corev1.ConditionUnknown, unreachable), step: time.Minute, wantReason: ReasonNodeUnreachable},
		"unreachable past the grace, opted in: Recreate": {
			retention: "whenNodeLost: Recreate, whenNodeUnreachable: Recreate, nodeLostGracePeriod: 1m",
			node:      node("gpu-7", "gpu-7.example.internal", corev1.ConditionUnknown, unreachable), step: time.Minute, wantGone: true, wantReason: ReasonNodeLost},
		"out of service, the pod delete refused: told, PVC kept": {
			retention: "whenNodeLost: Recreate", node: node("gpu-7", "gpu-7.example.internal", corev1.ConditionUnknown, outOfService), refuse: true, wantReason: ReasonPodDeleteRefused},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			policies := `[{targetReplicatedJobs: [w], templates: [{metadata: {name: scratch}, spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}}], retentionPolicy: {` + tc.retention + `}}]`
			js := addontest.JobSet("ns", "train").UID("uid-1").VolumeClaimsPolicies(policies).VolumeClaimsAdmitted().ReplicatedJobs(
				addontest.ReplicatedJob("w").Mount("scratch")).Obj()
			job := addontest.Job(js, "w", 0).UID("job-0").ControlledBy(js).Obj()
			pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "scratch-train-w-0-0", UID: "pvc-uid", Labels: map[string]string{
				contract.ManagedByLabelKey: contract.VolumeClaimsManagedByValue, contract.JobSetNameLabelKey: "train", contract.VolumeClaimTemplateLabelKey: "scratch"}},
				Spec: corev1.PersistentVolumeClaimSpec{VolumeName: "pv-gpu-7"}}
			pv := hostnamePV(term(corev1.LabelHostname, "gpu-7.example.internal"))
			pv.Name = "pv-gpu-7"
			pod := addontest.Pod("ns", "train", "w", 0, 0).Name("train-w-0-0").UID("pod-uid").Label(contract.JobSetUIDLabelKey, "uid-1").ControlledBy(job).
				Volume(corev1.Volume{Name: "scratch", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: pvc.Name}}}).Obj()
			pod.Spec.NodeName = "gpu-7"
			objs := []client.Object{js, job, pvc, pv, pod}
			if tc.node != nil {
				objs = append(objs, tc.node)
			}
			scheme := runtime.NewScheme()
			_ = clientgoscheme.AddToScheme(scheme)
			_ = jobsetv1alpha2.AddToScheme(scheme)
			b := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).WithIndex(&corev1.Node{}, NodeHostnameIndex, NodeHostname)
			if tc.refuse {
				b = b.WithInterceptorFuncs(refuse)
			}
			c := b.Build()
			clk := clocktesting.NewFakePassiveClock(t0)
			rec := events.NewFakeRecorder(10)
			n := &NodeLoss{Client: c, Reader: c, Recorder: rec, Clock: clk}
			req := ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "train"}}
			res, err := n.Reconcile(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			if tc.step > 0 {
				if res.RequeueAfter != time.Minute {
					t.Errorf("first look: again after %v, want the whole grace (1m) from now, whatever the taint's time", res.RequeueAfter)
				}
				clk.SetTime(t0.Add(tc.step))
				if _, err := n.Reconcile(context.Background(), req); err != nil {
					t.Fatal(err)
				}
			}
			pvcErr := c.Get(context.Background(), client.ObjectKeyFromObject(pvc), &corev1.PersistentVolumeClaim{})
			podErr := c.Get(context.Background(), client.ObjectKeyFromObject(pod), &corev1.Pod{})
			if gone := apierrors.IsNotFound(pvcErr) && apierrors.IsNotFound(podErr); gone != tc.wantGone || (!gone && (pvcErr != nil || podErr != nil)) {
				t.Errorf("PVC %v, pod %v; want gone %v", pvcErr, podErr, tc.wantGone)
			}
			close(rec.Events)
			var got []string
			for e := range rec.Events {
				got = append(got, e)
			}
			if tc.wantReason == "" {
				if len(got) > 0 {
					t.Errorf("events %q, want none", got)
				}
				return
			}
			if len(got) == 0 || !strings.Contains(got[0], " "+tc.wantReason+" ") {
				t.Errorf("events %q, want %s", got, tc.wantReason)
			}
		})
	}
}
