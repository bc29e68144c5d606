package sequencer_test

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/jobset-addons/jobset-addons/e2e/framework"
	"github.com/jobset-addons/jobset-addons/pkg/addon/addontest"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// TestForgedGatedPodNotReleased: a bare pod labelled as the pod of a sequenced JobSet's second
// stage (JobSet name and UID, ReplicatedJob, Job index, restart attempt, the gated label) and
// held by the sequencer's scheduling gate is not released when that stage is: a pod counts only
// through a Job the JobSet's controller made. The stage's real pod is released, the JobSet
// completes, and the forged pod still carries the gate.
func TestForgedGatedPodNotReleased(t *testing.T) {
	f := framework.NamespacedFeature("a forged gated pod", "is never released by the sequencer", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		c := framework.Client(t, cfg)
		ns := framework.NamespaceFrom(ctx)
		js := addontest.JobSet(ns, "forged-gated").InOrder().
			ReplicatedJobs(replicated("a", 1, 1, "3s"), replicated("b", 1, 1, "1s")).Obj()
		framework.CreateAll(ctx, t, c, js)
		forged := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "forged-b-0", Labels: map[string]string{
				contract.JobSetNameLabelKey: js.Name, contract.JobSetUIDLabelKey: string(js.UID),
				contract.ReplicatedJobNameLabelKey: "b", contract.JobIndexLabelKey: "0", contract.RestartAttemptLabelKey: "0",
				contract.SequencerGatedLabelKey: contract.EnabledValue,
			}},
			Spec: corev1.PodSpec{
				SchedulingGates: []corev1.PodSchedulingGate{{Name: contract.SequencerSchedulingGateValue}},
				Containers:      []corev1.Container{{Name: "main", Image: "forged"}},
			},
		}
		framework.CreateAll(ctx, t, c, forged)
		waitFinished(ctx, t, c, js)
		if r := released(t, js); r.RestartAttempt != 0 || !slices.Equal(r.ReplicatedJobs, []string{"b"}) {
			t.Errorf("released annotation %+v, want b of attempt 0", r)
		}
		// The real pod of b was released (the JobSet completed); give a late release of the
		// forged one a moment more to show.
		time.Sleep(2 * time.Second)
		if err := c.Get(ctx, client.ObjectKeyFromObject(forged), forged); err != nil {
			t.Fatal(err)
		}
		if !hasGate(forged.Spec.SchedulingGates) {
			t.Errorf("the forged pod was released: scheduling gates %v, node %q", forged.Spec.SchedulingGates, forged.Spec.NodeName)
		}
		return ctx
	})
	testenv.Test(t, f)
}
