package sequencer_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/jobset-addons/jobset-addons/e2e/framework"
	"github.com/jobset-addons/jobset-addons/e2e/testbed"
)

// TestSequencerCreatesDryRunsOnly: the sequencer's ServiceAccount holds pods create for its
// JobSet webhook's server-side dry runs. Its token used for a real create of a pod is refused by
// the chart's ValidatingAdmissionPolicy jobset-addons-sequencer-dry-runs-only (on by default),
// naming the sequencer; the same pod as a dry run is accepted.
func TestSequencerCreatesDryRunsOnly(t *testing.T) {
	f := framework.NamespacedFeature("the sequencer's pod creates", "dry runs only", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		ns := framework.NamespaceFrom(ctx)
		sequencer := framework.ServiceAccountClient(t, cfg, testbed.AddonNamespace, "jobset-addons-sequencer")
		pod := func() *corev1.Pod {
			return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "leaked"}, Spec: corev1.PodSpec{
				Containers: []corev1.Container{{Name: "c", Image: "busybox"}},
			}}
		}
		// The API server takes the policy in once it has loaded it, a moment after the add-on
		// started: a pod created before is deleted, and the create tried again.
		const want = "creates pods only as dry runs"
		admin := framework.Client(t, cfg)
		var last error
		framework.Eventually(ctx, t, 30*time.Second, "a real create refused", func(ctx context.Context) (bool, string, error) {
			p := pod()
			if last = sequencer.Create(ctx, p); last == nil {
				return false, "created", admin.Delete(ctx, p, client.GracePeriodSeconds(0))
			}
			return true, last.Error(), nil
		})
		if !strings.Contains(last.Error(), want) {
			t.Errorf("a real create of a pod by the sequencer = %v, want it refused with %q", last, want)
		}
		if err := sequencer.Create(ctx, pod(), client.DryRunAll); err != nil {
			t.Errorf("a dry run of a pod by the sequencer: %v", err)
		}
		// Nothing was made.
		time.Sleep(time.Second)
		var pods corev1.PodList
		if err := admin.List(ctx, &pods, client.InNamespace(ns)); err != nil || len(pods.Items) > 0 {
			t.Errorf("pods in %s: %d (%v), want none", ns, len(pods.Items), err)
		}
		return ctx
	})
	testenv.Test(t, f)
}
