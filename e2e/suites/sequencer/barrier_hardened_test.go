package sequencer_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/e2e/framework"
	"github.com/jobset-addons/jobset-addons/pkg/addon/addontest"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// TestStartBarrierStagedJobSet: the Trainer shape, init (1 pod) then node (2 pods) once init
// completes, with start-barrier JobSet, by upstream dependsOn and by startupPolicy InOrder. Each
// stage's pods wait for each other (a barrier per stage), both JobSets complete.
func TestStartBarrierStagedJobSet(t *testing.T) {
	f := framework.NamespacedFeature("start-barrier JobSet on a staged JobSet", "a barrier per stage, it completes", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		c := framework.Client(t, cfg)
		ns := framework.NamespaceFrom(ctx)
		dependsOn := withBarrier(addontest.JobSet(ns, "trainer"), contract.StartBarrierJobSet, "20s").ReplicatedJobs(
			replicated("init", 1, 1, "1s"),
			replicated("node", 1, 2, "1s").DependsOnStatus("init", jobsetv1alpha2.DependencyComplete)).Obj()
		inOrder := withBarrier(addontest.JobSet(ns, "in-order"), contract.StartBarrierJobSet, "20s").StartupPolicy(jobsetv1alpha2.InOrder).
			ReplicatedJobs(replicated("init", 1, 1, "3s"), replicated("node", 1, 2, "1s")).Obj()
		byStage := func(rj string) string { return rj }
		watches := []*barrierWatch{startBarrierWatch(ctx, c, dependsOn, byStage), startBarrierWatch(ctx, c, inOrder, byStage)}
		framework.CreateAll(ctx, t, c, dependsOn, inOrder)
		for i, js := range []*jobsetv1alpha2.JobSet{dependsOn, inOrder} {
			waitFinished(ctx, t, c, js)
			watches[i].finish(t)
			if got := openedAnnotation(t, js); got.RestartAttempt != 0 || !slices.Equal(got.Groups, []string{"stage-0", "stage-1"}) {
				t.Errorf("%s: opened annotation %+v, want stage-0 then stage-1", js.Name, got)
			}
		}
		return ctx
	})
	testenv.Test(t, f)
}

// forgedPod is a bare pod that claims, by labels, to be a pod of js's ReplicatedJob rj in the
// restart attempt, with a barrier container that kwok shows waiting.
func forgedPod(js *jobsetv1alpha2.JobSet, name, rj string, attempt int) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: js.Namespace, Name: name, Labels: map[string]string{
			contract.JobSetNameLabelKey: js.Name, contract.JobSetUIDLabelKey: string(js.UID), contract.ReplicatedJobNameLabelKey: rj,
			contract.RestartAttemptLabelKey: fmt.Sprint(attempt), contract.StartBarrierLabelKey: contract.EnabledValue,
		}},
		Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{{Name: contract.StartBarrierContainerName, Image: "forged"}},
			Containers:     []corev1.Container{{Name: "main", Image: "forged"}},
		},
	}
}

// TestStartBarrierForgedPods: bare pods labelled as the JobSet's (name, UID, ReplicatedJob, one
// of restart attempt 7, one of attempt 0), with a barrier container that waits, neither change
// the attempt nor open the barrier while a real pod is not there; once it is, the real pods are
// opened, for attempt 0, and the JobSet completes. The forged pods are told nothing.
func TestStartBarrierForgedPods(t *testing.T) {
	f := framework.NamespacedFeature("forged pods", "count for no barrier", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		c := framework.Client(t, cfg)
		ns := framework.NamespaceFrom(ctx)
		js := withBarrier(addontest.JobSet(ns, "forged"), contract.StartBarrierJobSet, "30s").ReplicatedJobs(
			replicated("early", 1, 1, "1s"), heldBack(replicated("late", 1, 1, "1s"), ns)).Obj()
		framework.CreateAll(ctx, t, c, js)
		framework.Eventually(ctx, t, time.Minute, "early's pod at the barrier", func(ctx context.Context) (bool, string, error) {
			return countPods(jobSetPods(ctx, t, c, js), barrierWaiting) == 1, "", nil
		})
		forged := []*corev1.Pod{forgedPod(js, "forged-early-0", "early", 0), forgedPod(js, "forged-late-7", "late", 7)}
		framework.CreateAll(ctx, t, c, forged[0], forged[1])
		framework.Eventually(ctx, t, time.Minute, "the forged pods at the barrier", func(ctx context.Context) (bool, string, error) {
			return countPods(jobSetPods(ctx, t, c, js), barrierWaiting) == 3, "", nil
		})
		time.Sleep(3 * time.Second)
		if n := countPods(jobSetPods(ctx, t, c, js), func(p *corev1.Pod) bool { return barrierState(p) != "" }); n != 0 {
			t.Fatalf("%d pods told while late's pod is not at the barrier", n)
		}
		labelNode(ctx, t, c, ns)
		waitFinished(ctx, t, c, js)
		if got := openedAnnotation(t, js); got.RestartAttempt != 0 || !got.Has("jobset") {
			t.Errorf("opened annotation %+v, want attempt 0, jobset", got)
		}
		for _, p := range forged {
			if err := c.Get(ctx, client.ObjectKeyFromObject(p), p); err != nil {
				t.Fatal(err)
			}
			if s := barrierState(p); s != "" {
				t.Errorf("forged pod %s told %q", p.Name, s)
			}
		}
		return ctx
	})
	testenv.Test(t, f)
}

// setNodeLabel sets (value "null": removes) barrier-e2e on every kwok node.
func setNodeLabel(ctx context.Context, t *testing.T, c client.Client, value string) {
	t.Helper()
	var nodes corev1.NodeList
	if err := c.List(ctx, &nodes, client.MatchingLabels{"type": "kwok"}); err != nil {
		t.Fatal(err)
	}
	for i := range nodes.Items {
		patch := client.RawPatch(types.MergePatchType, fmt.Appendf(nil, `{"metadata":{"labels":{"barrier-e2e":%s}}}`, value))
		if err := c.Patch(ctx, &nodes.Items[i], patch); err != nil {
			t.Fatal(err)
		}
	}
}

// TestStartBarrierMissedResume: a barrier opened, then the sequencer is stopped, the JobSet
// suspended and resumed (written straight into etcd: the sequencer's webhook is down with it),
// and one of the new pods cannot be placed. Started again, the sequencer does not take the old
// "opened" record for the new run: the new pod that waits is not opened until the other is
// there too; then the JobSet completes.
func TestStartBarrierMissedResume(t *testing.T) {
	framework.NeedsLocalAddon(t)
	f := framework.NamespacedFeature("a suspend and resume the sequencer missed", "the new pods wait for each other again", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		c := framework.Client(t, cfg)
		ns := framework.NamespaceFrom(ctx)
		k := newSequencerKiller(ctx, t, c)
		defer k.restore(t)
		setNodeLabel(ctx, t, c, fmt.Sprintf("%q", ns))
		t.Cleanup(func() { setNodeLabel(context.Background(), t, c, "null") })
		js := withBarrier(addontest.JobSet(ns, "missed"), contract.StartBarrierJobSet, "60s").ReplicatedJobs(
			replicated("early", 1, 1, "6s"), heldBack(replicated("late", 1, 1, "6s"), ns)).Obj()
		framework.CreateAll(ctx, t, c, js)
		framework.Eventually(ctx, t, time.Minute, "the barrier opened", func(ctx context.Context) (bool, string, error) {
			err := c.Get(ctx, client.ObjectKeyFromObject(js), js)
			return err == nil && openedAnnotation(t, js).Has("jobset"), "", err
		})
		k.stop(t)
		setNodeLabel(ctx, t, c, "null") // late's next pod cannot be placed
		suspend := func(v bool) {
			t.Helper()
			if err := framework.EditInEtcd(ctx, k.tb, "jobset.x-k8s.io/jobsets/"+ns+"/"+js.Name, func(obj map[string]any) error {
				obj["spec"].(map[string]any)["suspend"] = v
				return nil
			}); err != nil {
				t.Fatalf("suspend=%t in etcd: %v", v, err)
			}
		}
		suspend(true)
		framework.Eventually(ctx, t, time.Minute, "suspended, its pods gone", func(ctx context.Context) (bool, string, error) {
			if err := c.Get(ctx, client.ObjectKeyFromObject(js), js); err != nil {
				return false, "", err
			}
			live := countPods(jobSetPods(ctx, t, c, js), func(p *corev1.Pod) bool { return p.DeletionTimestamp == nil })
			return apimeta.IsStatusConditionTrue(js.Status.Conditions, string(jobsetv1alpha2.JobSetSuspended)) && live == 0, fmt.Sprint(live, " pods"), nil
		})
		suspend(false)
		framework.Eventually(ctx, t, time.Minute, "early's new pod at the barrier", func(ctx context.Context) (bool, string, error) {
			return countPods(jobSetPods(ctx, t, c, js), barrierWaiting) == 1, "", nil
		})
		k.start(t)
		time.Sleep(3 * time.Second)
		if n := countPods(jobSetPods(ctx, t, c, js), func(p *corev1.Pod) bool { return p.DeletionTimestamp == nil && barrierState(p) != "" }); n != 0 {
			t.Fatalf("%d new pods told while late's new pod is not at the barrier (the old record reused)", n)
		}
		setNodeLabel(ctx, t, c, fmt.Sprintf("%q", ns))
		waitFinished(ctx, t, c, js)
		if got := openedAnnotation(t, js); got.Run == nil || *got.Run == "" || !got.Has("jobset") {
			t.Errorf("opened annotation %+v, want the resumed run's", got)
		}
		return ctx
	})
	testenv.Test(t, f)
}

// TestStartBarrierBlocked: a pod whose barrier container the kubelet cannot create
// (CreateContainerConfigError, played by kwok) never reaches the barrier: within 30 s the
// sequencer tells StartBarrierBlocked naming the pod, the container and the cause, once, and
// kubectl jobset-addons status shows it.
func TestStartBarrierBlocked(t *testing.T) {
	f := framework.NamespacedFeature("a pod stuck before its barrier", "is told within 30 s", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		c := framework.Client(t, cfg)
		ns := framework.NamespaceFrom(ctx)
		js := withBarrier(addontest.JobSet(ns, "blocked"), contract.StartBarrierJobSet, "").ReplicatedJobs(
			replicated("ok", 1, 1, "1s"),
			replicated("stuck", 1, 1, "1s").PodAnnotation(framework.BarrierWaitingReasonAnnotationKey, "CreateContainerConfigError")).Obj()
		framework.CreateAll(ctx, t, c, js)
		start := time.Now()
		var msgs []string
		framework.Eventually(ctx, t, 30*time.Second, "StartBarrierBlocked", func(ctx context.Context) (bool, string, error) {
			var err error
			msgs, err = framework.EventMessages(ctx, c, js, "StartBarrierBlocked")
			return len(msgs) > 0, "", err
		})
		t.Logf("StartBarrierBlocked after %v", time.Since(start).Round(100*time.Millisecond))
		if len(msgs) != 1 || !strings.Contains(msgs[0], "cannot open: pod blocked-stuck-0-") ||
			!strings.Contains(msgs[0], "init container "+contract.StartBarrierContainerName+" waits: CreateContainerConfigError") {
			t.Errorf("StartBarrierBlocked %q, want it to name stuck's pod, the barrier container and the cause", msgs)
		}
		status := framework.AddonsStatus(ctx, t, cfg, ns, js.Name)
		if !strings.Contains(status, "Blocked (") || !strings.Contains(status, "StartBarrierBlocked") {
			t.Errorf("kubectl jobset-addons status does not show the blocked barrier:\n%s", status)
		}
		time.Sleep(2 * time.Second)
		if again, _ := framework.EventMessages(ctx, c, js, "StartBarrierBlocked"); len(again) != 1 {
			t.Errorf("StartBarrierBlocked told %d times, want once: %q", len(again), again)
		}
		return ctx
	})
	testenv.Test(t, f)
}
