package addon

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

func TestRecent(t *testing.T) {
	t0 := time.Unix(1000, 0)
	big := func(i int) string { return fmt.Sprintf("%d", i) + strings.Repeat("x", 200<<10) }
	for _, tc := range []struct {
		name      string
		add       []int // keys, one a second from t0
		askAt     time.Duration
		wantHas   []int
		wantNot   []int
		wantCount int
	}{
		{name: "within ttl", add: []int{1, 2}, askAt: 5 * time.Second, wantHas: []int{1, 2}, wantCount: 2},
		{name: "past ttl", add: []int{1, 2}, askAt: 60*time.Second + 500*time.Millisecond, wantNot: []int{1}, wantHas: []int{2}, wantCount: 2},
		{name: "full: the oldest goes, not all", add: []int{1, 2, 3, 4, 5}, askAt: 5 * time.Second, wantHas: []int{2, 3, 4, 5}, wantNot: []int{1}, wantCount: 4},
		{name: "added again: refreshed", add: []int{1, 2, 3, 1, 4, 5}, askAt: 6 * time.Second, wantHas: []int{1, 4, 5}, wantNot: []int{2}, wantCount: 4},
		{name: "expired ones go when one comes", add: []int{1, 2, 3, 70}, askAt: 70 * time.Second, wantNot: []int{1, 2, 3}, wantHas: []int{70}, wantCount: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRecent(4, time.Minute)
			for i, k := range tc.add {
				at := t0.Add(time.Duration(i) * time.Second)
				if k == 70 {
					at = t0.Add(70 * time.Second)
				}
				r.add(big(k), at)
			}
			now := t0.Add(tc.askAt)
			for _, k := range tc.wantHas {
				if !r.has(big(k), now) {
					t.Errorf("key %d forgotten", k)
				}
			}
			for _, k := range tc.wantNot {
				if r.has(big(k), now) {
					t.Errorf("key %d remembered", k)
				}
			}
			if r.len() != tc.wantCount {
				t.Errorf("%d keys kept, want %d", r.len(), tc.wantCount)
			}
		})
	}
}

// TestRecentBounded: 5,000 distinct keys of 200 KiB leave maxRemembered small entries, not
// their text.
func TestRecentBounded(t *testing.T) {
	r := newRecent(maxRemembered, time.Hour)
	now := time.Unix(1000, 0)
	body := strings.Repeat("y", 200<<10)
	for i := range 5000 {
		r.add(fmt.Sprint(i)+body, now)
	}
	if r.len() != maxRemembered {
		t.Errorf("%d keys kept, want %d", r.len(), maxRemembered)
	}
	if !r.has("4999"+body, now) || r.has("0"+body, now) {
		t.Error("want the newest kept and the oldest gone")
	}
}

func TestTemplateKeySize(t *testing.T) {
	k := TemplateKey("ns", map[string]string{"a": strings.Repeat("v", 200<<10)}, nil, map[string]any{"x": 1})
	if len(k) != 64 || k == TemplateKey("ns", map[string]string{"a": "v"}, nil, map[string]any{"x": 1}) {
		t.Errorf("TemplateKey = %q: want a distinct 64-character digest", k)
	}
}

func TestToldPrune(t *testing.T) {
	var told Told
	told.Once("gone", "a")
	told.First("gone-too", "Reason")
	told.Once("alive", "a")
	alive := func(uid types.UID) bool { return uid == "alive" || uid == "late" }
	if n := told.Prune(alive); n != 0 || told.Len() != 3 {
		t.Fatalf("first Prune forgot %d, kept %d: want nothing forgotten before a second list", n, told.Len())
	}
	told.Once("late", "a") // created between two lists, alive at the next
	if n := told.Prune(alive); n != 2 {
		t.Errorf("second Prune forgot %d, want 2", n)
	}
	if !told.Has("alive", "a") || !told.Has("late", "a") || told.Has("gone", "a") || !told.First("gone-too", "Reason") {
		t.Error("want what was told of alive objects kept, of gone ones forgotten")
	}
	told.Once("back", "a")
	told.Prune(alive)
	told.Once("back", "b") // seen again: still not alive in the cache, forgotten at the next
	if told.Prune(alive); told.Has("back", "a") {
		t.Error("want an object not alive at two Prunes forgotten")
	}
}
