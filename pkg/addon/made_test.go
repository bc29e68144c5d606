package addon

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
)

func TestMade(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Unix(1000, 0))
	m := &Made{TTL: MadeTTL, Clock: clk}
	a, b := types.NamespacedName{Namespace: "ns", Name: "a"}, types.NamespacedName{Namespace: "ns", Name: "b"}
	if m.Pending(a) {
		t.Fatal("nothing created yet, but a is pending")
	}
	m.Created(a)
	if !m.Pending(a) || m.Pending(b) {
		t.Fatalf("after creating a: Pending(a)=%v Pending(b)=%v, want true false", m.Pending(a), m.Pending(b))
	}
	clk.SetTime(clk.Now().Add(29 * time.Second))
	if !m.Pending(a) {
		t.Fatal("a forgotten before its TTL")
	}
	m.Seen(a)
	if m.Pending(a) {
		t.Fatal("a pending after the cache showed it")
	}
	m.Created(b)
	clk.SetTime(clk.Now().Add(MadeTTL))
	if m.Pending(b) {
		t.Fatal("b still pending after its TTL: a missing object would never be made again")
	}
}

func TestNilMadeRemembersNothing(t *testing.T) {
	var m *Made
	key := types.NamespacedName{Namespace: "ns", Name: "a"}
	m.Created(key)
	if m.Pending(key) {
		t.Fatal("a nil Made remembered a creation")
	}
	m.Seen(key)
}
