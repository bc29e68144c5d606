package sequencer_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/jobset-addons/jobset-addons/e2e/framework"
	"github.com/jobset-addons/jobset-addons/pkg/addon/addontest"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// TestRecordsNotForgeable: the records the sequencer keeps on a JobSet are written by the
// sequencer alone. A user's patch that sets, changes or removes start-barrier-opened or
// released is refused naming the record (the chart's ValidatingAdmissionPolicy), and so is an
// update that puts barrier-state in a suspended barrier JobSet's pod template (the sequencer's
// webhook), while the sequencer's own writes of the records go on (the barrier opens, the
// stage is released).
func TestRecordsNotForgeable(t *testing.T) {
	f := framework.NamespacedFeature("the sequencer's records", "only the sequencer writes them", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		c := framework.Client(t, cfg)
		ns := framework.NamespaceFrom(ctx)
		opened := withBarrier(addontest.JobSet(ns, "opened").InOrder(), contract.StartBarrierStage, "").
			ReplicatedJobs(replicated("a", 1, 1, "1s"), replicated("b", 1, 2, "1h")).Obj()
		suspended := withBarrier(addontest.JobSet(ns, "suspended"), contract.StartBarrierJobSet, "").Suspend(true).
			ReplicatedJobs(replicated("w", 1, 2, "1s")).Obj()
		framework.CreateAll(ctx, t, c, opened, suspended)

		// The sequencer's own writes: stage b released, then its barrier opened.
		framework.Eventually(ctx, t, 2*time.Minute, "b released and its barrier opened", func(ctx context.Context) (bool, string, error) {
			if err := c.Get(ctx, client.ObjectKeyFromObject(opened), opened); err != nil {
				return false, "", err
			}
			b := openedAnnotation(t, opened)
			return released(t, opened).Has("b") && b.RestartAttempt == 0 && len(b.Groups) == 2,
				fmt.Sprint(opened.Annotations), nil
		})

		for _, tc := range []struct{ name, key, value string }{
			{"opened changed", contract.StartBarrierOpenedAnnotationKey, `{"restartAttempt":0,"groups":["stage-0","stage-1","stage-9"]}`},
			{"opened removed", contract.StartBarrierOpenedAnnotationKey, ""},
			{"released changed", contract.ReleasedAnnotationKey, `{"restartAttempt":0,"replicatedJobs":["a","b","c"]}`},
			{"released removed", contract.ReleasedAnnotationKey, ""},
		} {
			value := "null"
			if tc.value != "" {
				value = fmt.Sprintf("%q", tc.value)
			}
			patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%s}}}`, tc.key, value)
			err := c.Patch(ctx, opened.DeepCopy(), client.RawPatch(types.MergePatchType, []byte(patch)))
			if want := "metadata.annotations[" + tc.key + "]"; err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%s: a user's patch = %v, want it refused naming %s", tc.name, err, want)
			}
		}
		// On a JobSet that has none yet, too.
		for _, key := range []string{contract.StartBarrierOpenedAnnotationKey, contract.ReleasedAnnotationKey} {
			patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:"{}"}}}`, key)
			err := c.Patch(ctx, suspended.DeepCopy(), client.RawPatch(types.MergePatchType, []byte(patch)))
			if want := "metadata.annotations[" + key + "]"; err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%s added to a suspended JobSet: a user's patch = %v, want it refused naming %s", key, err, want)
			}
		}

		// barrier-state in a suspended JobSet's pod template: its pods would start opened.
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			if err := c.Get(ctx, client.ObjectKeyFromObject(suspended), suspended); err != nil {
				return err
			}
			pt := &suspended.Spec.ReplicatedJobs[0].Template.Spec.Template
			if pt.Annotations == nil {
				pt.Annotations = map[string]string{}
			}
			pt.Annotations[contract.StartBarrierStateAnnotationKey] = contract.StartBarrierOpen
			return c.Update(ctx, suspended)
		})
		want := "spec.replicatedJobs[0].template.spec.template.metadata.annotations[" + contract.StartBarrierStateAnnotationKey + "]"
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("barrier-state added to a suspended JobSet's pod template: update = %v, want it refused naming %s", err, want)
		}

		// Resumed, it opens its barrier (the sequencer writes its record) and completes.
		if err := c.Patch(ctx, suspended.DeepCopy(), client.RawPatch(types.MergePatchType, []byte(`{"spec":{"suspend":false}}`))); err != nil {
			t.Fatalf("resuming: %v", err)
		}
		waitFinished(ctx, t, c, suspended)
		if b := openedAnnotation(t, suspended); b.RestartAttempt != 0 || len(b.Groups) != 1 {
			t.Errorf("opened record %+v, want the JobSet's barrier opened by the sequencer", b)
		}
		return ctx
	})
	testenv.Test(t, f)
}
