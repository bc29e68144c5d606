package sequencer_test

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/e2e/framework"
	"github.com/jobset-addons/jobset-addons/pkg/addon/addontest"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// On the testbed, kwok plays the kubelet's part of the barrier (e2e/testbed/barrier.go): a
// bound pod with the barrier's init container is shown waiting in it (the container running,
// the pod Pending) until its barrier-state annotation says open, then running; failed makes
// it fail with the annotation as the container's message.

// barrierWaiting tells whether the pod waits at its barrier: bound, the barrier container running.
func barrierWaiting(p *corev1.Pod) bool {
	if p.Spec.NodeName == "" {
		return false
	}
	for _, s := range p.Status.InitContainerStatuses {
		if s.Name == contract.StartBarrierContainerName {
			return s.State.Running != nil
		}
	}
	return false
}

func barrierState(p *corev1.Pod) string {
	return p.Annotations[contract.StartBarrierStateAnnotationKey]
}

// barrierWatch polls a JobSet's pods every 50 ms and checks, in each list, the barrier's
// promise: no pod of a group is told open while a pod of the group (of the same attempt) is
// neither waiting nor told. It also records when each pod was first seen waiting and open.
type barrierWatch struct {
	podPoll
	waiting map[types.UID]time.Time
	opened  map[types.UID]time.Time
	names   map[types.UID]string
}

func startBarrierWatch(ctx context.Context, c client.Client, js *jobsetv1alpha2.JobSet, groupOf func(rj string) string) *barrierWatch {
	w := &barrierWatch{podPoll: podPoll{broken: "opened early"}, waiting: map[types.UID]time.Time{}, opened: map[types.UID]time.Time{}, names: map[types.UID]string{}}
	w.stop = framework.PollPods(ctx, c, func(pods []corev1.Pod) {
		now := time.Now()
		w.mu.Lock()
		defer w.mu.Unlock()
		type key struct {
			attempt int
			group   string
		}
		open, notThere := map[key]string{}, map[key]string{}
		for i := range pods {
			p := &pods[i]
			if p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded {
				continue
			}
			w.names[p.UID] = p.Name
			k := key{attemptOf(p), groupOf(p.Labels[contract.ReplicatedJobNameLabelKey])}
			switch {
			case barrierState(p) == contract.StartBarrierOpen:
				open[k] = p.Name
				if _, ok := w.opened[p.UID]; !ok {
					w.opened[p.UID] = now
				}
			case barrierWaiting(p):
				if _, ok := w.waiting[p.UID]; !ok {
					w.waiting[p.UID] = now
				}
			default:
				notThere[k] = p.Name
			}
		}
		for k, o := range open {
			if n, ok := notThere[k]; ok {
				w.violations = append(w.violations, fmt.Sprintf("attempt %d, barrier %s: %s told open while %s was not at the barrier", k.attempt, k.group, o, n))
			}
		}
	}, client.InNamespace(js.Namespace), client.MatchingLabels{contract.JobSetNameLabelKey: js.Name})
	return w
}

// withBarrier is js with a start barrier of mode and, if not empty, timeout.
func withBarrier(js *addontest.JobSetWrapper, mode contract.StartBarrier, timeout string) *addontest.JobSetWrapper {
	js.Annotation(contract.StartBarrierAnnotationKey, string(mode))
	if timeout != "" {
		js.Annotation(contract.StartBarrierTimeoutAnnotationKey, timeout)
	}
	return js
}

// heldBack makes the pods of the ReplicatedJob schedulable only on a node with the label
// barrier-e2e=<value> (labelNode adds it).
func heldBack(rj *addontest.ReplicatedJobWrapper, value string) *addontest.ReplicatedJobWrapper {
	rj.PodSpec().NodeSelector = map[string]string{"barrier-e2e": value}
	return rj
}

// labelNode puts barrier-e2e=value on a kwok node until the test ends.
func labelNode(ctx context.Context, t *testing.T, c client.Client, value string) {
	t.Helper()
	var nodes corev1.NodeList
	if err := c.List(ctx, &nodes, client.MatchingLabels{"type": "kwok"}); err != nil || len(nodes.Items) == 0 {
		t.Fatalf("listing kwok nodes: %v (%d)", err, len(nodes.Items))
	}
	node := &nodes.Items[0]
	set := func(v any) {
		patch := client.RawPatch(types.MergePatchType, fmt.Appendf(nil, `{"metadata":{"labels":{"barrier-e2e":%s}}}`, v))
		if err := c.Patch(ctx, node.DeepCopy(), patch); err != nil {
			t.Errorf("labelling node %s: %v", node.Name, err)
		}
	}
	set(fmt.Sprintf("%q", value))
	t.Cleanup(func() { set("null") })
}

func jobSetPods(ctx context.Context, t *testing.T, c client.Client, js *jobsetv1alpha2.JobSet) []corev1.Pod {
	t.Helper()
	var list corev1.PodList
	if err := c.List(ctx, &list, client.InNamespace(js.Namespace), client.MatchingLabels{contract.JobSetNameLabelKey: js.Name}); err != nil {
		t.Fatal(err)
	}
	return list.Items
}

func countPods(pods []corev1.Pod, ok func(*corev1.Pod) bool) int {
	n := 0
	for i := range pods {
		if ok(&pods[i]) {
			n++
		}
	}
	return n
}

func openedAnnotation(t *testing.T, js *jobsetv1alpha2.JobSet) contract.BarriersOpened {
	t.Helper()
	value, ok := js.Annotations[contract.StartBarrierOpenedAnnotationKey]
	if !ok {
		return contract.BarriersOpened{RestartAttempt: -1}
	}
	b, errs := contract.ParseBarriersOpened(value, contract.JobSetAnnotationPath(contract.StartBarrierOpenedAnnotationKey))
	if len(errs) > 0 {
		t.Fatalf("opened annotation %q: %v", value, errs.ToAggregate())
	}
	return b
}

// eventsSaying waits (up to 20 s) for n Events of the reason on js and returns their messages.
func eventsSaying(ctx context.Context, t *testing.T, c client.Client, js *jobsetv1alpha2.JobSet, reason string, n int) []string {
	t.Helper()
	var msgs []string
	framework.Eventually(ctx, t, 20*time.Second, fmt.Sprintf("%d %s Events", n, reason), func(ctx context.Context) (bool, string, error) {
		var err error
		msgs, err = framework.EventMessages(ctx, c, js, reason)
		return len(msgs) >= n, strings.Join(msgs, " | "), err
	})
	slices.Sort(msgs)
	return msgs
}

// TestStartBarrier: 2 Jobs × 2 pods, one Job's pods held back (no node for them) for 12 s. The
// pods that are placed wait at the barrier; the Event StartBarrierWaiting names the missing
// pods once half the 20 s timeout passed; when the last pod waits, every pod is told open at
// once, never earlier, the opening is recorded on the JobSet, StartBarrierOpened says how many
// pods and how long the first waited, and the JobSet completes.
func TestStartBarrier(t *testing.T) {
	f := framework.NamespacedFeature("a start barrier", "opens when the last pod waits, never earlier", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		c := framework.Client(t, cfg)
		ns := framework.NamespaceFrom(ctx)
		js := withBarrier(addontest.JobSet(ns, "barrier"), contract.StartBarrierJobSet, "20s").ReplicatedJobs(
			replicated("early", 1, 2, "3s").InitContainers("download"),
			heldBack(replicated("late", 1, 2, "3s"), ns),
		).Obj()
		w := startBarrierWatch(ctx, c, js, func(string) string { return "jobset" })
		framework.CreateAll(ctx, t, c, js)

		// The webhook put the barrier after the user's init container, with its volume and label.
		for _, rj := range js.Spec.ReplicatedJobs {
			spec := rj.Template.Spec.Template.Spec
			last := spec.InitContainers[len(spec.InitContainers)-1]
			if last.Name != contract.StartBarrierContainerName || (rj.Name == "early" && spec.InitContainers[0].Name != "download") {
				t.Errorf("%s: init containers %v, want the barrier last", rj.Name, spec.InitContainers)
			}
			if !slices.ContainsFunc(spec.Volumes, func(v corev1.Volume) bool {
				return v.Name == contract.StartBarrierContainerName && v.DownwardAPI != nil
			}) || rj.Template.Spec.Template.Labels[contract.StartBarrierLabelKey] != contract.EnabledValue {
				t.Errorf("%s: no barrier volume or label: %+v", rj.Name, rj.Template.Spec.Template)
			}
			if sc := last.SecurityContext; sc == nil || !*sc.RunAsNonRoot || !*sc.ReadOnlyRootFilesystem || *sc.AllowPrivilegeEscalation {
				t.Errorf("%s: barrier security context %+v", rj.Name, sc)
			}
		}

		framework.Eventually(ctx, t, time.Minute, "early's pods at the barrier", func(ctx context.Context) (bool, string, error) {
			pods := jobSetPods(ctx, t, c, js)
			return countPods(pods, barrierWaiting) == 2, fmt.Sprint(len(pods), " pods"), nil
		})
		waiting := eventsSaying(ctx, t, c, js, "StartBarrierWaiting", 1)
		if len(waiting) != 1 || !strings.Contains(waiting[0], "2 of 4 pods wait") || !strings.Contains(waiting[0], "barrier-late-0-") ||
			!strings.Contains(waiting[0], "(not scheduled)") {
			t.Errorf("StartBarrierWaiting %q, want it to name late's two pods, not scheduled", waiting)
		}
		pods := jobSetPods(ctx, t, c, js)
		if n := countPods(pods, func(p *corev1.Pod) bool { return barrierState(p) != "" || p.Status.Phase != corev1.PodPending }); n != 0 {
			t.Errorf("%d pods told or running before the last pod waits", n)
		}
		status := framework.AddonsStatus(ctx, t, cfg, ns, js.Name)
		if !regexp.MustCompile(`(?m)^\s*jobset\s+0\s+4\s+2\s+no\s+barrier-late-0-0-\S+ \(not scheduled\), barrier-late-0-1-\S+ \(not scheduled\)\s*$`).MatchString(status) {
			t.Errorf("kubectl jobset-addons status does not show the barrier waiting for late's pods:\n%s", status)
		}
		labelNode(ctx, t, c, ns)
		waitFinished(ctx, t, c, js)
		w.finish(t)

		if got := openedAnnotation(t, js); got.RestartAttempt != 0 || !slices.Equal(got.Groups, []string{"jobset"}) {
			t.Errorf("opened annotation %+v, want attempt 0, jobset", got)
		}
		opened := eventsSaying(ctx, t, c, js, "StartBarrierOpened", 1)
		if len(opened) != 1 || !strings.Contains(opened[0], "Opened start barrier jobset (restart attempt 0): 4 pods, the first waited") {
			t.Errorf("StartBarrierOpened %q", opened)
		}
		// Every pod was told (and none before the last pod reached the barrier: w.finish).
		w.mu.Lock()
		defer w.mu.Unlock()
		// (A late pod may reach the barrier and be told between two polls: it is seen open only.)
		if len(w.opened) != 4 || len(w.waiting) < 2 {
			t.Errorf("seen %d pods waiting and %d told open, want at least 2 and 4", len(w.waiting), len(w.opened))
		}
		return ctx
	})
	testenv.Test(t, f)
}
