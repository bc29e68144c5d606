package addon

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
)

func object(name, uid string, created time.Time) *metav1.ObjectMeta {
	return &metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(uid), CreationTimestamp: metav1.NewTime(created)}
}

func TestMade(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Unix(1000, 0))
	m := &Made{TTL: MadeTTL, Clock: clk}
	a, b := object("a", "uid-a", clk.Now()), object("b", "uid-b", clk.Now())
	keyA, keyB := types.NamespacedName{Namespace: "ns", Name: "a"}, types.NamespacedName{Namespace: "ns", Name: "b"}
	if m.Pending(keyA) {
		t.Fatal("nothing created yet, but a is pending")
	}
	m.Created(a)
	if !m.Pending(keyA) || m.Pending(keyB) {
		t.Fatalf("after creating a: Pending(a)=%v Pending(b)=%v, want true false", m.Pending(keyA), m.Pending(keyB))
	}
	clk.SetTime(clk.Now().Add(29 * time.Second))
	if !m.Pending(keyA) {
		t.Fatal("a forgotten before its TTL")
	}
	m.Seen(a)
	if m.Pending(keyA) {
		t.Fatal("a pending after the cache showed it")
	}
	m.Created(b)
	clk.SetTime(clk.Now().Add(MadeTTL))
	if m.Pending(keyB) {
		t.Fatal("b still pending after its TTL: a missing object would never be made again")
	}
}

// The watch brought the object before the create answered: the creation told after it is not
// pending, so that a reconcile after the object's deletion makes it again at once.
func TestMadeSeenBeforeCreated(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Unix(1000, 0))
	m := &Made{TTL: MadeTTL, Clock: clk}
	c := object("c", "uid-c", clk.Now())
	key := types.NamespacedName{Namespace: "ns", Name: "c"}
	m.Seen(c)
	m.Created(c)
	if m.Pending(key) {
		t.Fatal("c pending although the cache showed it before its create answered")
	}
	// An older object of the same name seen before does not count for a new one.
	m.Seen(object("d", "uid-old", clk.Now()))
	m.Created(object("d", "uid-new", clk.Now()))
	if !m.Pending(types.NamespacedName{Namespace: "ns", Name: "d"}) {
		t.Fatal("d not pending: the cache showed only an older d")
	}
	// Objects older than TTL are not remembered at all.
	m.Seen(object("e", "uid-e", clk.Now().Add(-time.Hour)))
	if len(m.early) != 1 {
		t.Fatalf("remembered %d early UIDs, want 1, the old d's (c's creation was told, e is old)", len(m.early))
	}
}

func TestNilMadeRemembersNothing(t *testing.T) {
	var m *Made
	a := object("a", "uid-a", time.Now())
	m.Created(a)
	if m.Pending(types.NamespacedName{Namespace: "ns", Name: "a"}) {
		t.Fatal("a nil Made remembered a creation")
	}
	m.Seen(a)
}

func TestChanged(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Unix(1000, 0))
	c := &Changed{TTL: MadeTTL, Clock: clk}
	a := object("a", "uid-a", clk.Now())
	a.ResourceVersion = "10"
	if c.Pending(a) {
		t.Fatal("nothing written yet, but a is pending")
	}
	c.Wrote(a)
	if !c.Pending(a) {
		t.Fatal("a not pending while the cache shows it as it was when written")
	}
	clk.SetTime(clk.Now().Add(29 * time.Second))
	if !c.Pending(a) {
		t.Fatal("a forgotten before its TTL")
	}
	// The cache shows the change: not pending, and forgotten.
	after := *a
	after.ResourceVersion = "11"
	if c.Pending(&after) {
		t.Fatal("a pending although the cache shows it changed")
	}
	if c.Pending(a) {
		t.Fatal("a pending again after the cache showed it changed")
	}
	// A change the cache never shows is made again after TTL.
	b := object("b", "uid-b", clk.Now())
	b.ResourceVersion = "20"
	c.Wrote(b)
	clk.SetTime(clk.Now().Add(MadeTTL))
	if c.Pending(b) {
		t.Fatal("b still pending after its TTL")
	}
	// Entries of objects never looked at again (deleted) are pruned.
	c.Wrote(object("x", "uid-x", clk.Now()))
	clk.SetTime(clk.Now().Add(MadeTTL))
	c.Wrote(object("y", "uid-y", clk.Now()))
	if _, ok := c.at["uid-x"]; ok || len(c.at) != 1 {
		t.Fatalf("remembered %v, want y only", c.at)
	}
	var none *Changed
	none.Wrote(a)
	if none.Pending(a) {
		t.Fatal("a nil Changed remembered a change")
	}
}

// The object arrived in the cache after the reconcile read it and before it asked: taken before
// the read, PendingNow still holds it, where Pending after the read would not.
func TestMadePendingNow(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Unix(1000, 0))
	m := &Made{TTL: MadeTTL, Clock: clk}
	a, b := object("a", "uid-a", clk.Now()), object("b", "uid-b", clk.Now())
	keyA, keyB := types.NamespacedName{Namespace: "ns", Name: "a"}, types.NamespacedName{Namespace: "ns", Name: "b"}
	m.Created(a)
	m.Created(b)
	before := m.PendingNow() // the reconcile's snapshot, then its read of the cache (a not there)
	m.Seen(a)                // a arrives in the cache
	if !before.Has(keyA) || m.Pending(keyA) {
		t.Fatalf("snapshot has a: %v (want true); Pending(a) after its arrival: %v (want false)", before.Has(keyA), m.Pending(keyA))
	}
	if after := m.PendingNow(); after.Has(keyA) || !after.Has(keyB) {
		t.Fatalf("PendingNow after a arrived: %v, want b only", after.UnsortedList())
	}
	clk.SetTime(clk.Now().Add(MadeTTL))
	if m.PendingNow().Len() != 0 || m.Pending(keyB) {
		t.Fatal("b still pending after its TTL")
	}
	var none *Made
	if none.PendingNow().Len() != 0 {
		t.Fatal("a nil Made has pending objects")
	}
}
