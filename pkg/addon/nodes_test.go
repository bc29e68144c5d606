package addon

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestHealthOf(t *testing.T) {
	taint := func(key string) corev1.Taint { return corev1.Taint{Key: key, Effect: corev1.TaintEffectNoExecute} }
	cases := map[string]struct {
		ready  corev1.ConditionStatus
		taints []corev1.Taint
		want   NodeHealth
	}{
		"Ready":                         {corev1.ConditionTrue, nil, NodeReady},
		"Ready condition Unknown":       {corev1.ConditionUnknown, nil, NodeUnreachable},
		"Ready condition False":         {corev1.ConditionFalse, nil, NodeUnreachable},
		"no Ready condition":            {"", nil, NodeUnreachable},
		"Ready but tainted unreachable": {corev1.ConditionTrue, []corev1.Taint{taint(corev1.TaintNodeUnreachable)}, NodeUnreachable},
		"Ready but tainted not-ready":   {corev1.ConditionTrue, []corev1.Taint{taint(corev1.TaintNodeNotReady)}, NodeUnreachable},
		"out of service":                {corev1.ConditionUnknown, []corev1.Taint{taint(corev1.TaintNodeUnreachable), taint(corev1.TaintNodeOutOfService)}, NodeOutOfService},
		"another taint leaves it Ready": {corev1.ConditionTrue, []corev1.Taint{taint("example.com/gpu")}, NodeReady},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			n := &corev1.Node{Spec: corev1.NodeSpec{Taints: tc.taints}}
			if tc.ready != "" {
				n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: tc.ready}}
			}
			if got := HealthOf(n); got != tc.want {
				t.Errorf("HealthOf = %v, want %v", got, tc.want)
			}
			TrimNode(n)
			if got := HealthOf(n); got != tc.want {
				t.Errorf("HealthOf after TrimNode = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestNodesSeen(t *testing.T) {
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	down := &corev1.Node{ObjectMeta: metav1.ObjectMeta{UID: "n1"}, Spec: corev1.NodeSpec{Taints: []corev1.Taint{{
		Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoExecute, TimeAdded: &metav1.Time{Time: t0.Add(-time.Hour)}}}}}
	up := down.DeepCopy()
	up.Spec.Taints = nil
	up.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
	var s NodesSeen
	steps := []struct {
		node   *corev1.Node
		at     time.Time
		want   time.Time
		wantOK bool
	}{
		{down, t0, t0, true},                              // first seen now, not at the taint's time
		{down, t0.Add(time.Minute), t0, true},             // still since then
		{up, t0.Add(2 * time.Minute), time.Time{}, false}, // Ready: forgotten
		{down, t0.Add(3 * time.Minute), t0.Add(3 * time.Minute), true},
	}
	for i, st := range steps {
		got, ok := s.Since(st.node, st.at)
		if ok != st.wantOK || !got.Equal(st.want) {
			t.Errorf("step %d: Since = %v, %v; want %v, %v", i, got, ok, st.want, st.wantOK)
		}
	}
	s.Forget("n1")
	if got, _ := s.Since(down, t0.Add(4*time.Minute)); !got.Equal(t0.Add(4 * time.Minute)) {
		t.Errorf("after Forget: Since = %v, want now", got)
	}
}
