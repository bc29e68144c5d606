package sequencer_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/jobset-addons/jobset-addons/e2e/framework"
	"github.com/jobset-addons/jobset-addons/pkg/addon/addontest"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// TestStartBarrierNodeUnreachable: a pod waits at its barrier on a node that then stops
// answering (NotReady, tainted unreachable): its barrier container still shows running, as its
// kubelet last wrote. When the other pod of the barrier arrives, the barrier does not open on
// that stale count; within 30 s StartBarrierBlocked names the pod and its node, and kubectl
// jobset-addons status counts one pod waiting, naming early's as not counted.
func TestStartBarrierNodeUnreachable(t *testing.T) {
	f := framework.NamespacedFeature("a barrier pod on an unreachable node", "does not count as waiting, and is told", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		c := framework.Client(t, cfg)
		ns := framework.NamespaceFrom(ctx)
		cs, err := kubernetes.NewForConfig(cfg.Client().RESTConfig())
		if err != nil {
			t.Fatal(err)
		}
		node := "barrier-unreachable"
		taint := corev1.Taint{Key: "barrier-e2e/unreachable", Value: ns, Effect: corev1.TaintEffectNoSchedule}
		alloc := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8"), corev1.ResourceMemory: resource.MustParse("32Gi"), corev1.ResourcePods: resource.MustParse("10")}
		if err := framework.AddNode(ctx, cs, node, map[string]string{"barrier-e2e/unreachable": ns}, []corev1.Taint{taint}, alloc); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cs.CoreV1().Nodes().Delete(context.Background(), node, metav1.DeleteOptions{}) })
		early := replicated("early", 1, 1, "10m")
		early.PodSpec().NodeSelector = map[string]string{"barrier-e2e/unreachable": ns}
		early.PodSpec().Tolerations = []corev1.Toleration{{Key: taint.Key, Operator: corev1.TolerationOpEqual, Value: ns, Effect: taint.Effect}}
		js := withBarrier(addontest.JobSet(ns, "unreachable"), contract.StartBarrierJobSet, "").ReplicatedJobs(
			early, heldBack(replicated("late", 1, 1, "10m"), ns)).Obj()
		framework.CreateAll(ctx, t, c, js)
		framework.Eventually(ctx, t, time.Minute, "early's pod at the barrier", func(ctx context.Context) (bool, string, error) {
			return countPods(jobSetPods(ctx, t, c, js), func(p *corev1.Pod) bool { return barrierWaiting(p) && p.Spec.NodeName == node }) == 1, "", nil
		})
		if err := framework.PartitionNode(ctx, cs, node, time.Now()); err != nil {
			t.Fatal(err)
		}
		labelNode(ctx, t, c, ns) // late's pod can be placed now
		// At the barrier, or past it if it opened on the stale count (checked below).
		framework.Eventually(ctx, t, time.Minute, "late's pod at the barrier", func(ctx context.Context) (bool, string, error) {
			return countPods(jobSetPods(ctx, t, c, js), func(p *corev1.Pod) bool {
				return (barrierWaiting(p) || barrierState(p) != "") && p.Spec.NodeName != "" && p.Spec.NodeName != node
			}) == 1, "", nil
		})
		if n := countPods(jobSetPods(ctx, t, c, js), func(p *corev1.Pod) bool { return barrierState(p) != "" }); n != 0 {
			t.Errorf("%d pods told as soon as late's pod came: the barrier opened on early's stale status", n)
		}
		start := time.Now()
		var msgs []string
		framework.Eventually(ctx, t, 30*time.Second, "StartBarrierBlocked", func(ctx context.Context) (bool, string, error) {
			var err error
			msgs, err = framework.EventMessages(ctx, c, js, "StartBarrierBlocked")
			return len(msgs) > 0, "", err
		})
		t.Logf("StartBarrierBlocked after %v: %s", time.Since(start).Round(100*time.Millisecond), msgs[0])
		if !strings.Contains(msgs[0], "cannot open: pod unreachable-early-0-") || !strings.Contains(msgs[0], "node "+node+" is NotReady or unreachable") {
			t.Errorf("StartBarrierBlocked %q, want it to name early's pod and its node", msgs)
		}
		time.Sleep(3 * time.Second)
		if n := countPods(jobSetPods(ctx, t, c, js), func(p *corev1.Pod) bool { return barrierState(p) != "" }); n != 0 {
			t.Errorf("%d pods told while early's pod is on an unreachable node: the barrier opened on a stale count", n)
		}
		// kubectl jobset-addons status counts as the barrier does: late's pod waits, early's does
		// not, and is named with its node and why.
		status := framework.AddonsStatus(ctx, t, cfg, ns, js.Name)
		row := ""
		for _, line := range strings.Split(status, "\n") {
			if f := strings.Fields(line); len(f) > 4 && f[0] == "jobset" {
				row = line
			}
		}
		if f := strings.Fields(row); len(f) < 5 || f[2] != "2" || f[3] != "1" || f[4] != "no" ||
			!strings.Contains(row, "unreachable-early-0-") || !strings.Contains(row, "(on "+node+", NotReady or unreachable: not counted as waiting)") {
			t.Errorf("kubectl jobset-addons status barrier row %q, want 2 pods, 1 waiting, not open, early's pod named as not counted:\n%s", row, status)
		}
		return ctx
	})
	testenv.Test(t, f)
}
