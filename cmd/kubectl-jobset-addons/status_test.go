package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/jobset-addons/jobset-addons/pkg/addon/addontest"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// TestBarrierNodeDown: of a barrier's three pods, each with its barrier container running as
// its kubelet last wrote, one is on a Ready node, one on a NotReady node and one on a node that
// was deleted. Only the first counts as waiting, as the sequencer counts them; the others are
// named with their node and why they do not count.
func TestBarrierNodeDown(t *testing.T) {
	js := addontest.JobSet("ns", "js").UID("js-uid").Annotation(contract.StartBarrierAnnotationKey, string(contract.StartBarrierJobSet)).
		ReplicatedJobs(addontest.ReplicatedJob("w").Replicas(3)).Obj()
	objs := []client.Object{js,
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "ready"}, Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}},
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "partitioned"}, Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionUnknown}}},
			Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoExecute}}}},
	}
	for i, node := range []string{"ready", "partitioned", "deleted"} {
		job := addontest.Job(js, "w", i).UID("job-" + node).ControlledBy(js).Obj()
		pod := addontest.Pod("ns", "js", "w", i, 0).Name("pod-" + node).ControlledBy(job).Obj()
		pod.Spec.NodeName = node
		pod.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: contract.StartBarrierContainerName,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Now()}}}}
		objs = append(objs, job, pod)
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).Build()
	var out bytes.Buffer
	if err := barriers(context.Background(), c, &out, js); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{
		"jobset", "  3  1  no", // PODS 3, WAITING 1
		"pod-partitioned (on partitioned, NotReady or unreachable: not counted as waiting)",
		"pod-deleted (on deleted, deleted: not counted as waiting)",
	} {
		if !strings.Contains(strings.Join(strings.Fields(got), "  "), strings.Join(strings.Fields(want), "  ")) {
			t.Errorf("status barriers:\n%s\nwant %q in it", got, want)
		}
	}
	if strings.Contains(got, "pod-ready") {
		t.Errorf("status barriers:\n%s\nnames pod-ready, which waits", got)
	}
}
