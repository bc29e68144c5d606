package kind_test

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/e2e/framework"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// pods lists the JobSet's pods, sorted by name.
func pods(ctx context.Context, t *testing.T, c client.Client, js *jobsetv1alpha2.JobSet, extra ...client.ListOption) []corev1.Pod {
	t.Helper()
	var l corev1.PodList
	opts := append([]client.ListOption{client.InNamespace(js.Namespace), client.MatchingLabels{contract.JobSetNameLabelKey: js.Name}}, extra...)
	if err := c.List(ctx, &l, opts...); err != nil {
		t.Fatalf("listing pods of %s: %v", js.Name, err)
	}
	sort.Slice(l.Items, func(i, j int) bool { return l.Items[i].Name < l.Items[j].Name })
	return l.Items
}

// logs returns the log of pod's main container (the first; "work" in the suite's own workloads).
func logs(ctx context.Context, t *testing.T, p *corev1.Pod) string {
	t.Helper()
	out, err := kb.Kubectl(ctx, nil, "-n", p.Namespace, "logs", p.Name, "-c", p.Spec.Containers[0].Name)
	if err != nil {
		t.Fatalf("logs of %s: %v", p.Name, err)
	}
	return strings.TrimSpace(string(out))
}

// waitPods waits until n pods of js match ok.
func waitPods(ctx context.Context, t *testing.T, c client.Client, js *jobsetv1alpha2.JobSet, n int, what string, timeout time.Duration, ok func(*corev1.Pod) bool) []corev1.Pod {
	t.Helper()
	var got []corev1.Pod
	framework.Eventually(ctx, t, timeout, fmt.Sprintf("%d pods of %s %s", n, js.Name, what), func(ctx context.Context) (bool, string, error) {
		got = got[:0]
		var seen []string
		for _, p := range pods(ctx, t, c, js) {
			seen = append(seen, p.Name+"="+string(p.Status.Phase))
			if ok(&p) {
				got = append(got, p)
			}
		}
		return len(got) == n, strings.Join(seen, " "), nil
	})
	return got
}

func running(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil
}

// workers are the nodes that run workloads (no control-plane taint), sorted by name.
func workers(ctx context.Context, t *testing.T, c client.Client) []string {
	t.Helper()
	var nodes corev1.NodeList
	if err := c.List(ctx, &nodes); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, n := range nodes.Items {
		if !slices.ContainsFunc(n.Spec.Taints, func(tt corev1.Taint) bool { return tt.Effect == corev1.TaintEffectNoSchedule }) {
			out = append(out, n.Name)
		}
	}
	sort.Strings(out)
	if len(out) == 0 {
		t.Fatal("no node takes workloads")
	}
	return out
}

// placement is where pods run: node name to pod names, and how many nodes.
func placement(ps []corev1.Pod) (map[string][]string, int) {
	m := map[string][]string{}
	for _, p := range ps {
		m[p.Spec.NodeName] = append(m[p.Spec.NodeName], p.Name)
	}
	return m, len(m)
}
