package kind_test

import (
	"context"
	"fmt"
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

// logs returns the log of pod's container "work".
func logs(ctx context.Context, t *testing.T, p *corev1.Pod) string {
	t.Helper()
	out, err := kb.Kubectl(ctx, nil, "-n", p.Namespace, "logs", p.Name, "-c", "work")
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
