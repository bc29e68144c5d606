package kind_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	coschedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"github.com/jobset-addons/jobset-addons/e2e/framework"
	"github.com/jobset-addons/jobset-addons/e2e/kindbed"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// TestGangOnRealPods: podgroups' coscheduling PodGroup, enforced by scheduler-plugins running in
// the cluster. A gang of three that fits runs, every pod bound by that scheduler; a gang of three
// of which only two fit binds none, where the same pods without the gang get two bound.
func TestGangOnRealPods(t *testing.T) {
	f := framework.NamespacedFeature("podgroups", "gangs bound all or nothing by in-cluster coscheduling", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		c := framework.Client(t, cfg)
		ns := framework.NamespaceFrom(ctx)
		gang := map[string]string{contract.SchedulerAnnotationKey: "coscheduling"}

		fits := kindbed.JobSet(ns, "fits", gang, 0, kindbed.ReplicatedJob("w", 1, 3, "sleep 3"))
		if err := c.Create(ctx, fits); err != nil {
			t.Fatal(err)
		}
		framework.Eventually(ctx, t, time.Minute, "PodGroup of fits", func(ctx context.Context) (bool, string, error) {
			var pg coschedv1alpha1.PodGroup
			err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "fits"}, &pg)
			if err != nil {
				return false, err.Error(), nil
			}
			return pg.Spec.MinMember == 3, fmt.Sprintf("minMember %d", pg.Spec.MinMember), nil
		})
		framework.WaitJobSet(ctx, t, c, fits, jobsetv1alpha2.JobSetCompleted)
		for _, p := range pods(ctx, t, c, fits) {
			if p.Spec.SchedulerName != kindbed.CoschedulingSchedulerName || p.Spec.NodeName == "" {
				t.Errorf("pod %s: schedulerName %q, node %q: want bound by %s", p.Name, p.Spec.SchedulerName, p.Spec.NodeName, kindbed.CoschedulingSchedulerName)
			}
		}

		// Each pod, kept to one worker, asks for 45% of the CPU that worker has free: two fit,
		// three do not.
		node := workers(ctx, t, c)[0]
		cpu := freeCPU(ctx, t, c, node) * 45 / 100
		t.Logf("each pod of the gangs below requests %dm CPU of node %s", cpu, node)
		big := func(name string, annotations map[string]string) *jobsetv1alpha2.JobSet {
			rj := kindbed.ReplicatedJob("w", 1, 3, "sleep 3600")
			rj.Template.Spec.Template.Spec.NodeSelector = map[string]string{corev1.LabelHostname: node}
			rj.Template.Spec.Template.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: *resource.NewMilliQuantity(cpu, resource.DecimalSI)}
			return kindbed.JobSet(ns, name, annotations, 0, rj)
		}
		tooBig := big("too-big", gang)
		if err := c.Create(ctx, tooBig); err != nil {
			t.Fatal(err)
		}
		waitPods(ctx, t, c, tooBig, 3, "created", time.Minute, func(*corev1.Pod) bool { return true })
		time.Sleep(20 * time.Second) // several scheduling cycles of coscheduling
		for _, p := range pods(ctx, t, c, tooBig) {
			if p.Spec.NodeName != "" {
				t.Errorf("gang pod %s was bound to %s while its gang cannot fit", p.Name, p.Spec.NodeName)
			}
		}
		if err := c.Delete(ctx, tooBig, client.PropagationPolicy("Foreground")); err != nil {
			t.Fatal(err)
		}
		framework.Eventually(ctx, t, time.Minute, "gang pods gone", func(ctx context.Context) (bool, string, error) {
			n := len(pods(ctx, t, c, tooBig))
			return n == 0, fmt.Sprintf("%d pods", n), nil
		})

		plain := big("plain", nil)
		if err := c.Create(ctx, plain); err != nil {
			t.Fatal(err)
		}
		waitPods(ctx, t, c, plain, 2, "running without a gang", time.Minute, running)
		return ctx
	})
	testenv.Test(t, f)
}

// freeCPU is node's allocatable CPU, in millicores, less what its pods request.
func freeCPU(ctx context.Context, t *testing.T, c client.Client, node string) int64 {
	t.Helper()
	var n corev1.Node
	if err := c.Get(ctx, client.ObjectKey{Name: node}, &n); err != nil {
		t.Fatal(err)
	}
	free := n.Status.Allocatable.Cpu().MilliValue()
	var all corev1.PodList
	if err := c.List(ctx, &all); err != nil {
		t.Fatal(err)
	}
	for _, p := range all.Items {
		if p.Spec.NodeName != node || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		for _, ctr := range p.Spec.Containers {
			free -= ctr.Resources.Requests.Cpu().MilliValue()
		}
	}
	return free
}
