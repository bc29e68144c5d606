package podgroups_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	coschedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"
	volcanov1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/jobset-addons/jobset-addons/e2e/framework"
	"github.com/jobset-addons/jobset-addons/pkg/addon/addontest"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// Each pod of the suite's JobSets requests, as the scheduler counts it, 1 CPU and 1Gi: its
// container asks for 500m and 1Gi, its init container for 1 CPU and 512Mi (max of the two).
var (
	podCPU    = resource.MustParse("1")
	podMemory = resource.MustParse("1Gi")
)

// newJobSet is a JobSet gang-scheduled by scheduler ("" for none).
func newJobSet(ns, name string, scheduler contract.Scheduler) *addontest.JobSetWrapper {
	j := addontest.JobSet(ns, name)
	if scheduler != "" {
		j.Annotation(contract.SchedulerAnnotationKey, string(scheduler))
	}
	return j
}

// replicated is an Indexed ReplicatedJob of replicas Jobs of pods pods each (all at once, no
// retries) that run for run (kwok's delay); each pod requests 1 CPU and 1Gi, as podCPU and
// podMemory say.
func replicated(name string, replicas, pods int32, run string) *addontest.ReplicatedJobWrapper {
	rj := addontest.ReplicatedJob(name).Replicas(replicas).Pods(pods).Requests("500m", "1Gi").InitContainers("init").
		PodAnnotation(framework.DelayAnnotationKey, run)
	rj.PodSpec().InitContainers[0].Resources.Requests = corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("512Mi"),
	}
	return rj
}

// onPool keeps every pod of rj on the suite's tainted nodes of pool.
func onPool(rj *addontest.ReplicatedJobWrapper, pool string) *addontest.ReplicatedJobWrapper {
	spec := rj.PodSpec()
	spec.NodeSelector = map[string]string{poolLabel: pool}
	spec.Tolerations = []corev1.Toleration{{Key: poolLabel, Operator: corev1.TolerationOpEqual, Value: pool, Effect: corev1.TaintEffectNoSchedule}}
	return rj
}

const poolLabel = "podgroups-e2e/pool"

// addPoolNode adds a fake node to pool with room for podsRoom pods, tainted so that only the
// pool's pods land there, and removes it when the test ends.
func addPoolNode(ctx context.Context, t *testing.T, cfg *envconf.Config, pool, name string, podsRoom int) {
	t.Helper()
	addPoolNodeLabelled(ctx, t, cfg, pool, name, podsRoom, nil)
}

// addPoolNodeLabelled is addPoolNode with more node labels.
func addPoolNodeLabelled(ctx context.Context, t *testing.T, cfg *envconf.Config, pool, name string, podsRoom int, labels map[string]string) {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cfg.Client().RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	alloc := corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("32"), corev1.ResourceMemory: resource.MustParse("256Gi"),
		corev1.ResourcePods: *resource.NewQuantity(int64(podsRoom), resource.DecimalSI),
	}
	taint := corev1.Taint{Key: poolLabel, Value: pool, Effect: corev1.TaintEffectNoSchedule}
	nodeLabels := map[string]string{poolLabel: pool}
	maps.Copy(nodeLabels, labels)
	if err := framework.AddNode(ctx, cs, name, nodeLabels, []corev1.Taint{taint}, alloc); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}) })
}

// pods are the JobSet's pods.
func pods(ctx context.Context, t *testing.T, c client.Client, ns, jobSet string) []corev1.Pod {
	t.Helper()
	var list corev1.PodList
	if err := c.List(ctx, &list, client.InNamespace(ns), client.MatchingLabels{contract.JobSetNameLabelKey: jobSet}); err != nil {
		t.Fatal(err)
	}
	return list.Items
}

// holdUnbound waits for the JobSet's n pods, checks each (check may be nil), and fails the
// test if any is bound within 8 s: the gang must wait, because of why.
func holdUnbound(ctx context.Context, t *testing.T, c client.Client, ns, jobSet string, n int, why string, check func(*corev1.Pod)) {
	t.Helper()
	framework.Eventually(ctx, t, time.Minute, fmt.Sprintf("%d gang pods created", n), func(ctx context.Context) (bool, string, error) {
		got := len(pods(ctx, t, c, ns, jobSet))
		return got == n, fmt.Sprintf("%d pods", got), nil
	})
	if check != nil {
		for _, p := range pods(ctx, t, c, ns, jobSet) {
			check(&p)
		}
	}
	hold := time.Now().Add(8 * time.Second)
	for time.Now().Before(hold) {
		if got := bound(pods(ctx, t, c, ns, jobSet)); got > 0 {
			t.Fatalf("%d pods of the gang were bound while %s", got, why)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// waitAllBound waits until the JobSet's n pods are all bound, and says how long after since.
func waitAllBound(ctx context.Context, t *testing.T, c client.Client, ns, jobSet string, n int, since time.Time) time.Duration {
	t.Helper()
	framework.Eventually(ctx, t, 90*time.Second, fmt.Sprintf("all %d gang pods bound", n), func(ctx context.Context) (bool, string, error) {
		ps := pods(ctx, t, c, ns, jobSet)
		return len(ps) == n && bound(ps) == n, fmt.Sprintf("%d pods, %d bound", len(ps), bound(ps)), nil
	})
	return time.Since(since)
}

// requireWorkloadAPI skips a kubernetes case where the Workload API is not served
// (framework.RequireWorkloadAPI).
func requireWorkloadAPI(t *testing.T, cfg *envconf.Config) {
	t.Helper()
	framework.RequireWorkloadAPI(t, cfg)
}

// bound counts the pods given a node.
func bound(ps []corev1.Pod) int {
	n := 0
	for _, p := range ps {
		if p.Spec.NodeName != "" {
			n++
		}
	}
	return n
}

// podGroupNames are the PodGroups of the scheduler's kind in ns labelled with the JobSet.
func podGroupNames(ctx context.Context, c client.Client, ns, jobSet string, s contract.Scheduler) ([]string, error) {
	var names []string
	opts := []client.ListOption{client.InNamespace(ns), client.MatchingLabels{contract.JobSetNameLabelKey: jobSet}}
	switch s {
	case contract.SchedulerVolcano:
		var l volcanov1beta1.PodGroupList
		if err := c.List(ctx, &l, opts...); err != nil {
			return nil, err
		}
		for _, pg := range l.Items {
			names = append(names, pg.Name)
		}
	case contract.SchedulerKubernetes:
		var l schedulingv1beta1.PodGroupList
		if err := c.List(ctx, &l, opts...); err != nil {
			return nil, err
		}
		for _, pg := range l.Items {
			names = append(names, pg.Name)
		}
	default:
		var l coschedv1alpha1.PodGroupList
		if err := c.List(ctx, &l, opts...); err != nil {
			return nil, err
		}
		for _, pg := range l.Items {
			names = append(names, pg.Name)
		}
	}
	slices.Sort(names)
	return names, nil
}

// waitPodGroups waits until the JobSet's PodGroups are exactly want.
func waitPodGroups(ctx context.Context, t *testing.T, c client.Client, ns, jobSet string, s contract.Scheduler, want ...string) {
	t.Helper()
	slices.Sort(want)
	framework.Eventually(ctx, t, time.Minute, fmt.Sprintf("PodGroups of %s = %v", jobSet, want), func(ctx context.Context) (bool, string, error) {
		got, err := podGroupNames(ctx, c, ns, jobSet, s)
		if err != nil {
			return false, err.Error(), nil
		}
		return slices.Equal(got, want), fmt.Sprint(got), nil
	})
}

// waitGet waits until the object of type T, name in ns, can be read, and returns it.
func waitGet[T any, P interface {
	*T
	client.Object
}](ctx context.Context, t *testing.T, c client.Client, ns, name, what string) P {
	t.Helper()
	obj := P(new(T))
	framework.Eventually(ctx, t, time.Minute, what+" "+name, func(ctx context.Context) (bool, string, error) {
		err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, obj)
		return err == nil, fmt.Sprint(err), nil
	})
	return obj
}

// volcanoPodGroup, coschedPodGroup, nativePodGroup (scheduling.k8s.io) and workload wait for
// the object of that kind and name and return it.
func volcanoPodGroup(ctx context.Context, t *testing.T, c client.Client, ns, name string) *volcanov1beta1.PodGroup {
	return waitGet[volcanov1beta1.PodGroup](ctx, t, c, ns, name, "Volcano PodGroup")
}

func coschedPodGroup(ctx context.Context, t *testing.T, c client.Client, ns, name string) *coschedv1alpha1.PodGroup {
	return waitGet[coschedv1alpha1.PodGroup](ctx, t, c, ns, name, "coscheduling PodGroup")
}

func nativePodGroup(ctx context.Context, t *testing.T, c client.Client, ns, name string) *schedulingv1beta1.PodGroup {
	return waitGet[schedulingv1beta1.PodGroup](ctx, t, c, ns, name, "Kubernetes PodGroup")
}

func workload(ctx context.Context, t *testing.T, c client.Client, ns, name string) *schedulingv1beta1.Workload {
	return waitGet[schedulingv1beta1.Workload](ctx, t, c, ns, name, "Workload")
}

// waitWorkloadGone waits until the Workload is deleted.
func waitWorkloadGone(ctx context.Context, t *testing.T, c client.Client, ns, name string) {
	t.Helper()
	framework.Eventually(ctx, t, time.Minute, "Workload "+name+" deleted", func(ctx context.Context) (bool, string, error) {
		err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &schedulingv1beta1.Workload{})
		return apierrors.IsNotFound(err), fmt.Sprint(err), nil
	})
}

// minCount is a Kubernetes PodGroup's or template's gang minCount, 0 without a gang policy.
func minCount(p schedulingv1beta1.PodGroupSchedulingPolicy) int32 {
	if p.Gang == nil {
		return 0
	}
	return p.Gang.MinCount
}

// times multiplies a quantity.
func times(q resource.Quantity, n int) resource.Quantity {
	out := resource.Quantity{Format: q.Format}
	for range n {
		out.Add(q)
	}
	return out
}

// expectResources checks a PodGroup's minResources against n pods of the suite's requests.
func expectResources(t *testing.T, got corev1.ResourceList, n int) {
	t.Helper()
	for name, per := range map[corev1.ResourceName]resource.Quantity{corev1.ResourceCPU: podCPU, corev1.ResourceMemory: podMemory} {
		want := times(per, n)
		if q, ok := got[name]; !ok || q.Cmp(want) != 0 {
			t.Errorf("minResources[%s] = %v, want %s (%d pods)", name, got[name], want.String(), n)
		}
	}
}

// waitEvent waits for an Event of reason about the JobSet.
func waitEvent(ctx context.Context, t *testing.T, c client.Client, js *jobsetv1alpha2.JobSet, reason string) {
	t.Helper()
	framework.Eventually(ctx, t, time.Minute, "event "+reason, func(ctx context.Context) (bool, string, error) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(js), js); err != nil {
			return false, err.Error(), nil
		}
		reasons, err := framework.EventReasons(ctx, c, js)
		if err != nil {
			return false, err.Error(), nil
		}
		return reasons[reason] > 0, fmt.Sprint(reasons), nil
	})
}
