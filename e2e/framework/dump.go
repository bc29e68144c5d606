package framework

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
)

// DumpNamespace logs what a failed test needs to see in ns: its JobSets' conditions and
// annotations, its pods' phases, gates and init containers' states, and its Events.
func DumpNamespace(ctx context.Context, t *testing.T, c client.Client, ns string) {
	t.Helper()
	var jss jobsetv1alpha2.JobSetList
	if err := c.List(ctx, &jss, client.InNamespace(ns)); err == nil {
		for _, js := range jss.Items {
			t.Logf("JobSet %s: suspend=%v restarts=%d conditions=%+v annotations=%v", js.Name, js.Spec.Suspend, js.Status.Restarts, js.Status.Conditions, js.Annotations)
		}
	}
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace(ns)); err == nil {
		for _, p := range pods.Items {
			var inits []string
			for _, s := range p.Status.InitContainerStatuses {
				inits = append(inits, fmt.Sprintf("%s:%+v", s.Name, s.State))
			}
			t.Logf("pod %s: phase=%s node=%q gates=%v annotations=%v inits=%s", p.Name, p.Status.Phase, p.Spec.NodeName, p.Spec.SchedulingGates, p.Annotations, strings.Join(inits, " "))
		}
	}
	var events corev1.EventList
	if err := c.List(ctx, &events, client.InNamespace(ns)); err == nil {
		for _, e := range events.Items {
			t.Logf("event %s/%s %s %s: %s", e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Type, e.Reason, e.Message)
		}
	}
}
