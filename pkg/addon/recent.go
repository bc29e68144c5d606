package addon

import (
	"container/list"
	"crypto/sha256"
	"time"
)

// recent remembers, for ttl, when each of at most max keys was last accepted, by a SHA-256 of
// the key: a key of any size (a whole template) costs the same few bytes. When full, the key
// accepted longest ago is forgotten first; keys older than ttl are forgotten as new ones come.
// Not safe for concurrent use: DryRunner holds its mutex.
type recent struct {
	max   int
	ttl   time.Duration
	order *list.List // of *recentEntry, the newest first
	index map[[sha256.Size]byte]*list.Element
}

type recentEntry struct {
	sum [sha256.Size]byte
	at  time.Time
}

func newRecent(maxKeys int, ttl time.Duration) *recent {
	return &recent{max: maxKeys, ttl: ttl, order: list.New(), index: make(map[[sha256.Size]byte]*list.Element)}
}

// has tells whether key was added less than ttl before now.
func (r *recent) has(key string, now time.Time) bool {
	e, ok := r.index[sha256.Sum256([]byte(key))]
	return ok && now.Sub(e.Value.(*recentEntry).at) < r.ttl
}

// add records key as accepted at now, then forgets the keys past ttl and any over max.
func (r *recent) add(key string, now time.Time) {
	sum := sha256.Sum256([]byte(key))
	if e, ok := r.index[sum]; ok {
		e.Value.(*recentEntry).at = now
		r.order.MoveToFront(e)
	} else {
		r.index[sum] = r.order.PushFront(&recentEntry{sum: sum, at: now})
	}
	for back := r.order.Back(); back != nil; back = r.order.Back() {
		if r.order.Len() <= r.max && now.Sub(back.Value.(*recentEntry).at) < r.ttl {
			break
		}
		delete(r.index, back.Value.(*recentEntry).sum)
		r.order.Remove(back)
	}
}

// len is how many keys are remembered.
func (r *recent) len() int { return r.order.Len() }
