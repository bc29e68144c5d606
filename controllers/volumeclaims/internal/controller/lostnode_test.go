package controller

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func hostnamePV(terms ...corev1.NodeSelectorTerm) *corev1.PersistentVolume {
	pv := &corev1.PersistentVolume{}
	if len(terms) > 0 {
		pv.Spec.NodeAffinity = &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: terms}}
	}
	return pv
}

func term(key string, values ...string) corev1.NodeSelectorTerm {
	return corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: key, Operator: corev1.NodeSelectorOpIn, Values: values}}}
}

func TestPinnedNodes(t *testing.T) {
	cases := map[string]struct {
		pv   *corev1.PersistentVolume
		want []string
		ok   bool
	}{
		"no node affinity: never lost": {hostnamePV(), nil, false},
		"one node by hostname":         {hostnamePV(term(corev1.LabelHostname, "n1")), []string{"n1"}, true},
		"two terms":                    {hostnamePV(term(corev1.LabelHostname, "n2"), term(corev1.LabelHostname, "n1")), []string{"n1", "n2"}, true},
		"a zone: never lost":           {hostnamePV(term(corev1.LabelTopologyZone, "z1")), nil, false},
		"a zone in one term of two":    {hostnamePV(term(corev1.LabelHostname, "n1"), term(corev1.LabelTopologyZone, "z1")), nil, false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, ok := pinnedNodes(tc.pv)
			if ok != tc.ok || len(got) != len(tc.want) {
				t.Fatalf("pinnedNodes = %v, %v; want %v, %v", got, ok, tc.want, tc.ok)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("pinnedNodes = %v; want %v", got, tc.want)
				}
			}
		})
	}
}

func TestLossOf(t *testing.T) {
	now := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	ready := &corev1.Node{Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}}
	unreachable := func(since time.Time) *corev1.Node {
		return &corev1.Node{
			Spec:   corev1.NodeSpec{Taints: []corev1.Taint{{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoExecute, TimeAdded: &metav1.Time{Time: since}}}},
			Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionUnknown}}},
		}
	}
	notReadyNoTaint := &corev1.Node{Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionFalse}}}}
	grace := 5 * time.Minute
	cases := map[string]struct {
		found map[string]*corev1.Node
		lost  bool
		after time.Duration
	}{
		"deleted":                          {map[string]*corev1.Node{}, true, 0},
		"Ready: never":                     {map[string]*corev1.Node{"n1": ready}, false, 0},
		"NotReady without the taint":       {map[string]*corev1.Node{"n1": notReadyNoTaint}, false, 0},
		"unreachable within the grace":     {map[string]*corev1.Node{"n1": unreachable(now.Add(-time.Minute))}, false, 4 * time.Minute},
		"unreachable for longer than that": {map[string]*corev1.Node{"n1": unreachable(now.Add(-6 * time.Minute))}, true, 0},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := lossOf([]string{"n1"}, tc.found, grace, now)
			if got.lost != tc.lost || got.after != tc.after {
				t.Fatalf("lossOf = %+v; want lost %v after %v", got, tc.lost, tc.after)
			}
		})
	}
	// Two nodes: one Ready keeps the volume usable.
	if got := lossOf([]string{"n1", "n2"}, map[string]*corev1.Node{"n2": ready}, grace, now); got.lost {
		t.Errorf("a PV with one Ready node is lost: %+v", got)
	}
}

func TestAgeLabel(t *testing.T) {
	for d, want := range map[time.Duration]string{
		time.Minute: "lt1h", 2 * time.Hour: "lt1d", 3 * 24 * time.Hour: "lt7d", 10 * 24 * time.Hour: "lt30d", 40 * 24 * time.Hour: "ge30d",
	} {
		if got := ageLabel(d); got != want {
			t.Errorf("ageLabel(%v) = %s, want %s", d, got, want)
		}
	}
}
