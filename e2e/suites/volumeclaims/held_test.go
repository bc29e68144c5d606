package volumeclaims_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/e2e/framework"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// TestHeldClaims: when storage is really released. Kubernetes' pvc-protection keeps a deleted
// PVC while any pod that ran with it exists, and JobSet keeps its finished pods, so
// whenComplete: Delete alone leaves the PVCs Terminating: the add-on says so (VolumeClaimsHeld,
// and kubectl jobset-addons status) and deletes no pod; they go with the JobSet's pods (the JobSet
// deleted, or its ttlSecondsAfterFinished). With finishedPods: Delete the add-on deletes the
// finished pods that hold them, also for the per-pod PVCs of a ReplicatedJob that finished while
// another still runs.
func TestHeldClaims(t *testing.T) {
	held := framework.NamespacedFeature("whenComplete Delete, pods kept", "Terminating, VolumeClaimsHeld, gone with the JobSet", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		c := framework.Client(t, cfg)
		ns := framework.NamespaceFrom(ctx)
		js := newJobSet(ns, "held", policiesWith("{whenComplete: Delete}"), replicatedJob("w", 2, 2, "data", "ckpt"))
		delay(js, "2s")
		framework.CreateAll(ctx, t, c, js)
		waitClaimsBound(ctx, t, c, ns, js.Name, allClaims(js.Name))
		framework.WaitJobSet(ctx, t, c, js, jobsetv1alpha2.JobSetCompleted)
		waitClaimsTerminating(ctx, t, c, ns, allClaims(js.Name))
		waitEventSaying(ctx, t, c, js, "VolumeClaimsHeld", "data-held (4 pods)", "ckpt-held-w-0-0 (1 pod)", "ckpt-held-w-1-1 (1 pod)", "spec.ttlSecondsAfterFinished")
		status := framework.AddonsStatus(ctx, t, cfg, ns, js.Name)
		if !strings.Contains(status, "4 pods (4 finished)") || !strings.Contains(status, "Terminating") {
			t.Errorf("kubectl jobset-addons status does not tell what holds data-held:\n%s", status)
		}
		expectClaimsTerminatingStay(ctx, t, c, ns, allClaims(js.Name))
		if n := countPods(ctx, t, c, js, "w"); n != 4 {
			t.Errorf("%d pods left, want the 4 finished pods kept (finishedPods: Retain)", n)
		}
		if err := c.Delete(ctx, js, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil {
			t.Fatal(err)
		}
		waitClaimsGone(ctx, t, c, ns, js.Name, allClaims(js.Name))
		return ctx
	})

	ttl := framework.NamespacedFeature("whenComplete Delete, ttlSecondsAfterFinished", "gone with the JobSet's TTL", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		c := framework.Client(t, cfg)
		ns := framework.NamespaceFrom(ctx)
		js := newJobSet(ns, "ttl", policiesWith("{whenComplete: Delete, whenDeleted: Retain}"), replicatedJob("w", 2, 2, "data", "ckpt"))
		js.Spec.TTLSecondsAfterFinished = ptr.To[int32](2)
		delay(js, "2s")
		framework.CreateAll(ctx, t, c, js)
		waitClaimsBound(ctx, t, c, ns, js.Name, allClaims(js.Name))
		waitClaimsGone(ctx, t, c, ns, js.Name, allClaims(js.Name))
		return ctx
	})

	// A ReplicatedJob w with per-pod PVCs finishes while long still runs.
	targeted := func(finishedPods string) func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		return func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			c := framework.Client(t, cfg)
			ns := framework.NamespaceFrom(ctx)
			js := newJobSet(ns, "targeted", fmt.Sprintf(`
- targetReplicatedJobs: [w]
  templates: [{metadata: {name: ckpt}, spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}}]
  retentionPolicy: {whenComplete: Delete, finishedPods: %s}
`, finishedPods), replicatedJob("w", 2, 1, "ckpt"), replicatedJob("long", 1, 1))
			for i, d := range []string{"1s", "90s"} {
				js.Spec.ReplicatedJobs[i].Template.Spec.Template.Annotations = map[string]string{framework.DelayAnnotationKey: d}
			}
			names := perPodNames("ckpt", js.Name, "w", 2, 1)
			framework.CreateAll(ctx, t, c, js)
			waitClaimsBound(ctx, t, c, ns, js.Name, names)
			if finishedPods == "Delete" {
				waitClaimsGone(ctx, t, c, ns, js.Name, names)
				expectEvents(ctx, t, c, js, "FinishedPodsDeleted", "VolumeClaimsReleased")
				if n := countPods(ctx, t, c, js, "w"); n != 0 {
					t.Errorf("%d pods of w left, want its finished pods deleted", n)
				}
			} else {
				waitClaimsTerminating(ctx, t, c, ns, names)
				waitEventSaying(ctx, t, c, js, "VolumeClaimsHeld", "ckpt-targeted-w-0-0 (1 pod)")
				if n := countPods(ctx, t, c, js, "w"); n != 2 {
					t.Errorf("%d pods of w left, want both kept", n)
				}
			}
			// long still runs: its pod untouched, the JobSet not finished.
			if n := countPods(ctx, t, c, js, "long"); n != 1 {
				t.Errorf("%d pods of long, want 1", n)
			}
			if err := c.Get(ctx, client.ObjectKeyFromObject(js), js); err != nil {
				t.Fatal(err)
			}
			for _, cond := range js.Status.Conditions {
				if cond.Status == metav1.ConditionTrue && (cond.Type == string(jobsetv1alpha2.JobSetCompleted) || cond.Type == string(jobsetv1alpha2.JobSetFailed)) {
					t.Errorf("the JobSet finished (%s) before the check; want it running", cond.Type)
				}
			}
			return ctx
		}
	}
	testenv.Test(t, held, ttl,
		framework.NamespacedFeature("per-pod, ReplicatedJob done while another runs, finishedPods Delete", "gone at once, pods of w only deleted", targeted("Delete")),
		framework.NamespacedFeature("per-pod, ReplicatedJob done while another runs, finishedPods Retain", "Terminating, VolumeClaimsHeld", targeted("Retain")))
}

// waitEventSaying waits until the Events of the reason about js say, between them, every one of
// wants. The controller tells each held PVC once, as it finds it Terminating, so the PVCs of one
// JobSet may be told in several Events.
func waitEventSaying(ctx context.Context, t *testing.T, c client.Client, js *jobsetv1alpha2.JobSet, reason string, wants ...string) {
	t.Helper()
	framework.Eventually(ctx, t, 30*time.Second, reason+" Events saying "+strings.Join(wants, ", "), func(ctx context.Context) (bool, string, error) {
		msgs, err := framework.EventMessages(ctx, c, js, reason)
		if err != nil {
			return false, err.Error(), nil
		}
		all := strings.Join(msgs, "\n")
		for _, want := range wants {
			if !strings.Contains(all, want) {
				return false, fmt.Sprintf("no %s Event says %q; they say: %q", reason, want, msgs), nil
			}
		}
		return true, "", nil
	})
}

// countPods counts the pods of the JobSet's ReplicatedJob rj.
func countPods(ctx context.Context, t *testing.T, c client.Client, js *jobsetv1alpha2.JobSet, rj string) int {
	t.Helper()
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace(js.Namespace), client.MatchingLabels{
		contract.JobSetNameLabelKey: js.Name, contract.ReplicatedJobNameLabelKey: rj,
	}); err != nil {
		t.Fatal(err)
	}
	return len(pods.Items)
}

// expectClaimsTerminatingStay checks for a few seconds that the PVCs stay, Terminating: nothing
// releases them while the JobSet's finished pods exist.
func expectClaimsTerminatingStay(ctx context.Context, t *testing.T, c client.Client, ns string, names []string) {
	t.Helper()
	uids := waitClaimsTerminating(ctx, t, c, ns, names)
	time.Sleep(3 * time.Second)
	if again := waitClaimsTerminating(ctx, t, c, ns, names); fmt.Sprint(again) != fmt.Sprint(uids) {
		t.Errorf("the Terminating PVCs changed: %v, then %v", uids, again)
	}
}
