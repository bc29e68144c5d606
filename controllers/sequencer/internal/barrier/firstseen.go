package barrier

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// firstSeen remembers, per JobSet and key, when this process first saw something (a closed
// barrier with a pod waiting, a barrier pod unschedulable), on its own clock: how long a barrier
// waited never compares a node's clock with the controller's. A process that starts again
// counts again from when it first sees it: a barrier it finds waiting times out at most one
// timeout later than it would have (the barrier container's own deadline, timeout plus
// contract.StartBarrierGrace on its node's clock, still holds).
type firstSeen struct {
	mu sync.Mutex
	at map[types.NamespacedName]map[string]time.Time
}

// since is when key of the JobSet was first seen, now if it was not seen before.
func (f *firstSeen) since(js types.NamespacedName, key string, now time.Time) time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.at == nil {
		f.at = map[types.NamespacedName]map[string]time.Time{}
	}
	keys := f.at[js]
	if keys == nil {
		keys = map[string]time.Time{}
		f.at[js] = keys
	}
	if t, ok := keys[key]; ok {
		return t
	}
	keys[key] = now
	return now
}

// drop forgets key of the JobSet (the barrier opened, the pod no longer unschedulable).
func (f *firstSeen) drop(js types.NamespacedName, key string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.at[js], key)
	if len(f.at[js]) == 0 {
		delete(f.at, js)
	}
}

// forget forgets every key of the JobSet (gone, or no longer with a barrier).
func (f *firstSeen) forget(js types.NamespacedName) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.at, js)
}
