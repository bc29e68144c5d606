package controller

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/jobset-addons/jobset-addons/pkg/addon"
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

// node is a Node named name, labelled hostname, Ready or not, with taints.
func node(name, hostname string, ready corev1.ConditionStatus, taints ...corev1.Taint) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name), Labels: map[string]string{corev1.LabelHostname: hostname, "zone": "a"}},
		Spec:       corev1.NodeSpec{Taints: taints},
		Status:     corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: ready}}},
	}
}

func TestMatchingNodes(t *testing.T) {
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	c := fake.NewClientBuilder().WithScheme(scheme).WithIndex(&corev1.Node{}, NodeHostnameIndex, NodeHostname).WithObjects(
		node("gpu-7", "gpu-7.example.internal", corev1.ConditionTrue),
		node("gpu-8", "gpu-8", corev1.ConditionTrue),
	).Build()
	zoned := term(corev1.LabelHostname, "gpu-8")
	zoned.MatchExpressions = append(zoned.MatchExpressions, corev1.NodeSelectorRequirement{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"b"}})
	cases := map[string]struct {
		pv   *corev1.PersistentVolume
		want []string
	}{
		"a node whose name is not its hostname: found by its label": {hostnamePV(term(corev1.LabelHostname, "gpu-7.example.internal")), []string{"gpu-7"}},
		"the node's name is not a hostname: none":                   {hostnamePV(term(corev1.LabelHostname, "gpu-7")), nil},
		"name and hostname alike":                                   {hostnamePV(term(corev1.LabelHostname, "gpu-8")), []string{"gpu-8"}},
		"the rest of the term must match too":                       {hostnamePV(zoned), nil},
		"two terms, either matches":                                 {hostnamePV(term(corev1.LabelHostname, "gone"), term(corev1.LabelHostname, "gpu-8")), []string{"gpu-8"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			hostnames, ok := pinnedNodes(tc.pv)
			if !ok {
				t.Fatal("not pinned by hostname")
			}
			nodes, err := matchingNodes(context.Background(), c, tc.pv, hostnames)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, n := range nodes {
				got = append(got, n.Name)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("matching nodes (-want +got):\n%s", diff)
			}
		})
	}
}

// TestLossOf judges the grace on the add-on's own clock: a node seen unreachable for the first
// time is within the grace, whatever its taint's TimeAdded (another machine's clock) says.
func TestLossOf(t *testing.T) {
	t0 := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	grace := time.Minute
	longAgo := &metav1.Time{Time: t0.Add(-time.Hour)}
	unreachable := corev1.Taint{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoExecute, TimeAdded: longAgo}
	outOfService := corev1.Taint{Key: corev1.TaintNodeOutOfService, Value: "nodeshutdown", Effect: corev1.TaintEffectNoExecute}
	type look struct {
		at        time.Duration // after t0
		wantState lossState
		wantAfter time.Duration
	}
	cases := map[string]struct {
		nodes []*corev1.Node
		looks []look
	}{
		"no node matches: lost at once":       {nil, []look{{0, nodesLost, 0}}},
		"Ready: never":                        {[]*corev1.Node{node("n1", "n1", corev1.ConditionTrue)}, []look{{0, notLost, 0}, {time.Hour, notLost, 0}}},
		"out of service: lost at once":        {[]*corev1.Node{node("n1", "n1", corev1.ConditionUnknown, unreachable, outOfService)}, []look{{0, nodesLost, 0}}},
		"out of service and Ready: lost too":  {[]*corev1.Node{node("n1", "n1", corev1.ConditionTrue, outOfService)}, []look{{0, nodesLost, 0}}},
		"one Ready node of two keeps it":      {[]*corev1.Node{node("n1", "n1", corev1.ConditionUnknown, outOfService), node("n2", "n2", corev1.ConditionTrue)}, []look{{0, notLost, 0}}},
		"NotReady without the taint: counted": {[]*corev1.Node{node("n1", "n1", corev1.ConditionFalse)}, []look{{0, notLost, grace}, {grace, nodesUnreachable, 0}}},
		"unreachable since an hour by its taint: the grace counts from the first look": {
			[]*corev1.Node{node("n1", "n1", corev1.ConditionUnknown, unreachable)},
			[]look{{0, notLost, grace}, {grace / 2, notLost, grace / 2}, {grace, nodesUnreachable, 0}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			clk := clocktesting.NewFakePassiveClock(t0)
			var seen addon.NodesSeen
			for _, l := range tc.looks {
				clk.SetTime(t0.Add(l.at))
				got := lossOf([]string{"n1"}, tc.nodes, grace, clk.Now(), func(n *corev1.Node) time.Time {
					since, _ := seen.Since(n, clk.Now())
					return since
				})
				if got.state != l.wantState || got.after != l.wantAfter {
					t.Errorf("at t0+%v: lossOf = %+v; want state %v, after %v", l.at, got, l.wantState, l.wantAfter)
				}
			}
		})
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
