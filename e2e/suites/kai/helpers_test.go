package kai_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/jobset-addons/jobset-addons/e2e/framework"
	"github.com/jobset-addons/jobset-addons/pkg/addon/addontest"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

var (
	podGroupKind = schema.GroupVersionKind{Group: "scheduling.run.ai", Version: "v2alpha2", Kind: "PodGroup"}
	queueKind    = schema.GroupVersionKind{Group: "scheduling.run.ai", Version: "v2", Kind: "Queue"}
)

// kaiJobSet is a JobSet gang-scheduled by KAI.
func kaiJobSet(ns, name string) *addontest.JobSetWrapper {
	return addontest.JobSet(ns, name).Annotation(contract.SchedulerAnnotationKey, string(contract.SchedulerKAI))
}

// replicated is a ReplicatedJob of replicas Jobs of pods pods each (all at once) that run for
// run (kwok's delay), each pod requesting 1 CPU.
func replicated(name string, replicas, pods int32, run string) *addontest.ReplicatedJobWrapper {
	return addontest.ReplicatedJob(name).Replicas(replicas).Pods(pods).Requests("1", "1Gi").
		PodAnnotation(framework.DelayAnnotationKey, run)
}

const poolLabel = "kai-e2e/pool"

// inPool keeps every pod of rj on the nodes of pool (labelled and tainted with it).
func inPool(rj *addontest.ReplicatedJobWrapper, pool string) *addontest.ReplicatedJobWrapper {
	spec := rj.PodSpec()
	spec.NodeSelector = map[string]string{poolLabel: pool}
	spec.Tolerations = []corev1.Toleration{{Key: poolLabel, Operator: corev1.TolerationOpEqual, Value: pool, Effect: corev1.TaintEffectNoSchedule}}
	return rj
}

// poolNode adds a fake node of pool with room for room pods, and deletes it when the test ends.
func poolNode(ctx context.Context, t *testing.T, cfg *envconf.Config, pool, name string, room int64) {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cfg.Client().RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	alloc := corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("64"), corev1.ResourceMemory: resource.MustParse("256Gi"),
		corev1.ResourcePods: *resource.NewQuantity(room, resource.DecimalSI),
	}
	taint := corev1.Taint{Key: poolLabel, Value: pool, Effect: corev1.TaintEffectNoSchedule}
	if err := framework.AddNode(ctx, cs, name, map[string]string{poolLabel: pool}, []corev1.Taint{taint}, alloc); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}) })
}

// jobSetPods are the JobSet's pods, and how many of them are bound.
func jobSetPods(ctx context.Context, t *testing.T, c client.Client, ns, jobSet string) ([]corev1.Pod, int) {
	t.Helper()
	var list corev1.PodList
	if err := c.List(ctx, &list, client.InNamespace(ns), client.MatchingLabels{contract.JobSetNameLabelKey: jobSet}); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, p := range list.Items {
		if p.Spec.NodeName != "" {
			n++
		}
	}
	return list.Items, n
}

// noneBound waits for the JobSet's n pods and fails the test if any is bound within 8 s.
func noneBound(ctx context.Context, t *testing.T, c client.Client, ns, jobSet string, n int, why string) []corev1.Pod {
	t.Helper()
	framework.Eventually(ctx, t, time.Minute, fmt.Sprintf("%d pods of %s", n, jobSet), func(ctx context.Context) (bool, string, error) {
		ps, _ := jobSetPods(ctx, t, c, ns, jobSet)
		return len(ps) == n, fmt.Sprintf("%d pods", len(ps)), nil
	})
	for end := time.Now().Add(8 * time.Second); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
		if _, b := jobSetPods(ctx, t, c, ns, jobSet); b > 0 {
			t.Fatalf("%d pods of %s were bound while %s", b, jobSet, why)
		}
	}
	ps, _ := jobSetPods(ctx, t, c, ns, jobSet)
	return ps
}

// allBound waits until the JobSet's n pods are all bound, and returns how far apart their
// PodScheduled times are.
func allBound(ctx context.Context, t *testing.T, c client.Client, ns, jobSet string, n int) time.Duration {
	t.Helper()
	framework.Eventually(ctx, t, 90*time.Second, fmt.Sprintf("all %d pods of %s bound", n, jobSet), func(ctx context.Context) (bool, string, error) {
		ps, b := jobSetPods(ctx, t, c, ns, jobSet)
		return len(ps) == n && b == n, fmt.Sprintf("%d pods, %d bound", len(ps), b), nil
	})
	ps, _ := jobSetPods(ctx, t, c, ns, jobSet)
	var at []time.Time
	for _, p := range ps {
		for _, cond := range p.Status.Conditions {
			if cond.Type == corev1.PodScheduled && cond.Status == corev1.ConditionTrue {
				at = append(at, cond.LastTransitionTime.Time)
			}
		}
	}
	if len(at) == 0 {
		return 0
	}
	return slices.MaxFunc(at, time.Time.Compare).Sub(slices.MinFunc(at, time.Time.Compare))
}

// podGroup waits for the KAI PodGroup name in ns and returns it.
func podGroup(ctx context.Context, t *testing.T, c client.Client, ns, name string) *unstructured.Unstructured {
	t.Helper()
	pg := &unstructured.Unstructured{}
	pg.SetGroupVersionKind(podGroupKind)
	framework.Eventually(ctx, t, time.Minute, "KAI PodGroup "+name, func(ctx context.Context) (bool, string, error) {
		err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, pg)
		return err == nil, fmt.Sprint(err), nil
	})
	return pg
}

// podGroupNames are the KAI PodGroups in ns labelled with the JobSet, sorted.
func podGroupNames(ctx context.Context, c client.Client, ns, jobSet string) ([]string, error) {
	l := &unstructured.UnstructuredList{}
	l.SetGroupVersionKind(podGroupKind.GroupVersion().WithKind("PodGroupList"))
	if err := c.List(ctx, l, client.InNamespace(ns), client.MatchingLabels{contract.JobSetNameLabelKey: jobSet}); err != nil {
		return nil, err
	}
	var names []string
	for _, pg := range l.Items {
		names = append(names, pg.GetName())
	}
	slices.Sort(names)
	return names, nil
}

// spec is a KAI PodGroup's minMember, queue and subGroups ("name=min"), as the test compares
// them.
func spec(pg *unstructured.Unstructured) string {
	minMember, _, _ := unstructured.NestedInt64(pg.Object, "spec", "minMember")
	queue, _, _ := unstructured.NestedString(pg.Object, "spec", "queue")
	subs, _, _ := unstructured.NestedSlice(pg.Object, "spec", "subGroups")
	var parts []string
	for _, s := range subs {
		m, _ := s.(map[string]any)
		parts = append(parts, fmt.Sprintf("%v=%v", m["name"], m["minMember"]))
	}
	return fmt.Sprintf("minMember %d, queue %s, subGroups %v", minMember, queue, parts)
}

// checkPods checks that each pod names gang, its ReplicatedJob's subGroup, the queue and KAI.
func checkPods(t *testing.T, ps []corev1.Pod, gang, queue string) {
	t.Helper()
	for _, p := range ps {
		rj := p.Labels[contract.ReplicatedJobNameLabelKey]
		if got := p.Annotations[contract.KAIPodGroupAnnotationKey]; got != gang {
			t.Errorf("pod %s: pod-group-name %q, want %q", p.Name, got, gang)
		}
		if got := p.Labels[contract.KAISubGroupLabelKey]; got != rj {
			t.Errorf("pod %s: subgroup %q, want %q", p.Name, got, rj)
		}
		if got := p.Labels[contract.KAIQueueLabelKey]; got != queue {
			t.Errorf("pod %s: queue label %q, want %q", p.Name, got, queue)
		}
		if p.Spec.SchedulerName != framework.KAISchedulerName {
			t.Errorf("pod %s: schedulerName %q", p.Name, p.Spec.SchedulerName)
		}
	}
}

// createQueue creates a KAI Queue (under parent, "" for a top-level one), deleted when the
// test ends.
func createQueue(ctx context.Context, t *testing.T, c client.Client, name, parent string) {
	t.Helper()
	q := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{
		"resources": map[string]any{
			"cpu":    map[string]any{"quota": int64(-1), "limit": int64(-1), "overQuotaWeight": int64(1)},
			"gpu":    map[string]any{"quota": int64(-1), "limit": int64(-1), "overQuotaWeight": int64(1)},
			"memory": map[string]any{"quota": int64(-1), "limit": int64(-1), "overQuotaWeight": int64(1)},
		},
	}}}
	if parent != "" {
		_ = unstructured.SetNestedField(q.Object, parent, "spec", "parentQueue")
	}
	q.SetGroupVersionKind(queueKind)
	q.SetName(name)
	if err := c.Create(ctx, q); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Delete(context.Background(), q) })
}

// eventMessage waits for an Event of reason about obj and returns its message.
func eventMessage(ctx context.Context, t *testing.T, c client.Client, obj client.Object, reason string) string {
	t.Helper()
	var msgs []string
	framework.Eventually(ctx, t, time.Minute, "event "+reason, func(ctx context.Context) (bool, string, error) {
		var err error
		msgs, err = framework.EventMessages(ctx, c, obj, reason)
		if err != nil {
			return false, err.Error(), nil
		}
		return len(msgs) > 0, fmt.Sprint(msgs), nil
	})
	return msgs[0]
}
