package addon

import (
	"context"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Made remembers the objects a controller created until its cache shows them (client-go's
// "expectations"). A reconcile that runs before the watch has brought an object the last one
// created, for example on the watch event of its sibling, would otherwise create it again: a
// refused create and a read for each, which, in a burst, take the client's rate limit from the
// objects still to make. An object not seen within TTL is forgotten, and made again if it is
// still missing.
type Made struct {
	TTL   time.Duration
	Clock clock.PassiveClock

	mu sync.Mutex
	at map[types.NamespacedName]time.Time
}

// NewMade remembers created objects for ttl at most. A nil *Made remembers nothing.
func NewMade(ttl time.Duration) *Made {
	return &Made{TTL: ttl, Clock: clock.RealClock{}}
}

// Observe forgets each object of obj's kind as soon as c's informer has it, whether or not a
// reconcile follows: a reconcile after its deletion must make it again at once.
func (m *Made) Observe(ctx context.Context, c cache.Cache, obj client.Object) error {
	// Not waiting for the informer to sync: Setup goes on, and the controller waits for it.
	inf, err := c.GetInformer(ctx, obj, cache.BlockUntilSynced(false))
	if err != nil {
		return err
	}
	_, err = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{AddFunc: func(o any) {
		if mo, ok := o.(metav1.Object); ok {
			m.Seen(types.NamespacedName{Namespace: mo.GetNamespace(), Name: mo.GetName()})
		}
	}})
	return err
}

// Created records that the object key was created just now.
func (m *Made) Created(key types.NamespacedName) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.at == nil {
		m.at = map[types.NamespacedName]time.Time{}
	}
	m.at[key] = m.Clock.Now()
}

// Pending tells whether the object key, which the cache does not show, was created less than
// TTL ago: the cache is behind, and it must not be created again.
func (m *Made) Pending(key types.NamespacedName) bool {
	if m == nil {
		return false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	at, ok := m.at[key]
	if !ok {
		return false
	}
	if m.Clock.Since(at) >= m.TTL {
		delete(m.at, key)
		return false
	}
	return true
}

// Seen forgets the object key: the cache shows it.
func (m *Made) Seen(key types.NamespacedName) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.at, key)
}
