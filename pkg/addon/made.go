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

// MadeTTL is how long an object a controller created is taken to exist before its cache shows
// it; a reconcile that waits on one requeues after it.
const MadeTTL = 30 * time.Second

// Made remembers the objects a controller created until its cache shows them (client-go's
// "expectations"). A reconcile that runs before the watch has brought an object the last one
// created, for example on the watch event of its sibling, would otherwise create it again: a
// refused create and a read for each, which, in a burst, take the client's rate limit from the
// objects still to make. An object not seen within TTL is forgotten, and made again if it is
// still missing. A nil *Made remembers nothing.
type Made struct {
	TTL   time.Duration
	Clock clock.PassiveClock

	mu sync.Mutex
	at map[types.NamespacedName]time.Time
}

// ObserveMade remembers, for MadeTTL at most, the objects of the kinds of objs a controller
// creates, and forgets each as soon as c's informer has it, whether or not a reconcile follows:
// a reconcile after its deletion must make it again at once.
func ObserveMade(ctx context.Context, c cache.Cache, objs ...client.Object) (*Made, error) {
	m := &Made{TTL: MadeTTL, Clock: clock.RealClock{}, at: map[types.NamespacedName]time.Time{}}
	for _, obj := range objs {
		// Not waiting for the informer to sync: Setup goes on, and the controller waits for it.
		inf, err := c.GetInformer(ctx, obj, cache.BlockUntilSynced(false))
		if err != nil {
			return nil, err
		}
		if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{AddFunc: func(o any) {
			if mo, ok := o.(metav1.Object); ok {
				m.Seen(types.NamespacedName{Namespace: mo.GetNamespace(), Name: mo.GetName()})
			}
		}}); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// Created records that the object key was created just now.
func (m *Made) Created(key types.NamespacedName) {
	m.locked(func(at map[types.NamespacedName]time.Time) { at[key] = m.Clock.Now() })
}

// Pending tells whether the object key, which the cache does not show, was created less than
// TTL ago: the cache is behind, and it must not be created again.
func (m *Made) Pending(key types.NamespacedName) (pending bool) {
	m.locked(func(at map[types.NamespacedName]time.Time) {
		created, ok := at[key]
		if pending = ok && m.Clock.Since(created) < m.TTL; ok && !pending {
			delete(at, key)
		}
	})
	return pending
}

// Seen forgets the object key: the cache shows it.
func (m *Made) Seen(key types.NamespacedName) {
	m.locked(func(at map[types.NamespacedName]time.Time) { delete(at, key) })
}

func (m *Made) locked(f func(map[types.NamespacedName]time.Time)) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.at == nil {
		m.at = map[types.NamespacedName]time.Time{}
	}
	f(m.at)
}
