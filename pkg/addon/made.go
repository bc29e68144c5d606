package addon

import (
	"context"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
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
//
// The watch event of an object may come before the answer to its create: Made remembers, for
// TTL, the UIDs of young objects seen that no Created names yet, so that the creation told
// after them is not taken for one the cache has still to show (until TTL, it would keep a
// reconcile after the object's deletion from making it again).
type Made struct {
	TTL   time.Duration
	Clock clock.PassiveClock

	mu sync.Mutex
	at map[types.NamespacedName]made
	// early are the UIDs seen before their creation was told, and when.
	early  map[types.UID]time.Time
	pruned time.Time
}

type made struct {
	uid types.UID
	at  time.Time
}

// ObserveMade remembers, for MadeTTL at most, the objects of the kinds of objs a controller
// creates, and forgets each as soon as c's informer has it, whether or not a reconcile follows:
// a reconcile after its deletion must make it again at once.
func ObserveMade(ctx context.Context, c cache.Cache, objs ...client.Object) (*Made, error) {
	m := &Made{TTL: MadeTTL, Clock: clock.RealClock{}}
	for _, obj := range objs {
		// Not waiting for the informer to sync: Setup goes on, and the controller waits for it.
		inf, err := c.GetInformer(ctx, obj, cache.BlockUntilSynced(false))
		if err != nil {
			return nil, err
		}
		if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{AddFunc: func(o any) {
			if mo, ok := o.(metav1.Object); ok {
				m.Seen(mo)
			}
		}}); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// Created records that obj (as the create answered it, with its UID) was created just now.
func (m *Made) Created(obj metav1.Object) {
	key, uid := types.NamespacedName{Namespace: obj.GetNamespace(), Name: obj.GetName()}, obj.GetUID()
	m.locked(func() {
		if _, seen := m.early[uid]; seen && uid != "" {
			delete(m.early, uid)
			return
		}
		m.at[key] = made{uid: uid, at: m.Clock.Now()}
	})
}

// Pending tells whether the object key, which the cache does not show, was created less than
// TTL ago: the cache is behind, and it must not be created again.
func (m *Made) Pending(key types.NamespacedName) (pending bool) {
	m.locked(func() {
		created, ok := m.at[key]
		if pending = ok && m.Clock.Since(created.at) < m.TTL; ok && !pending {
			delete(m.at, key)
		}
	})
	return pending
}

// PendingNow is Pending of every object at once: those created less than TTL ago that the
// cache has not shown. A reconcile takes it before it reads the cache, and asks it of an object
// the read did not show: an object that arrives in the cache between the two is then taken as
// pending. Pending asked after the read would find its creation already forgotten, on its
// arrival, and the object would be made again: a create answered 409 (make bench ADDON=scale, 0.01
// a JobSet).
func (m *Made) PendingNow() sets.Set[types.NamespacedName] {
	out := sets.New[types.NamespacedName]()
	m.locked(func() {
		for key, created := range m.at {
			if m.Clock.Since(created.at) < m.TTL {
				out.Insert(key)
			} else {
				delete(m.at, key)
			}
		}
	})
	return out
}

// Seen forgets the creation of obj: the cache shows it. A young object whose creation was not
// told yet is remembered for the Created to come.
func (m *Made) Seen(obj metav1.Object) {
	key, uid := types.NamespacedName{Namespace: obj.GetNamespace(), Name: obj.GetName()}, obj.GetUID()
	m.locked(func() {
		if created, ok := m.at[key]; ok && (created.uid == uid || created.uid == "") {
			delete(m.at, key)
			return
		}
		now := m.Clock.Now()
		if uid == "" || now.Sub(obj.GetCreationTimestamp().Time) >= m.TTL {
			return // not one a create may still answer for
		}
		m.early[uid] = now
		if now.Sub(m.pruned) >= m.TTL {
			for u, at := range m.early {
				if now.Sub(at) >= m.TTL {
					delete(m.early, u)
				}
			}
			m.pruned = now
		}
	})
}

func (m *Made) locked(f func()) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.at == nil {
		m.at, m.early = map[types.NamespacedName]made{}, map[types.UID]time.Time{}
	}
	f()
}

// Changed remembers the objects a controller changed or deleted, each with the resourceVersion
// its cache showed when it wrote, until the cache shows it at another one (the change, or the
// deletion's timestamp, arrived) or TTL passes. A reconcile that runs before the watch has
// brought the change, for example on the watch event of a sibling, would otherwise write it
// again: a refused patch and a read, or a delete answered 404 and a second Event telling it.
// A nil *Changed remembers nothing.
type Changed struct {
	TTL   time.Duration
	Clock clock.PassiveClock

	mu     sync.Mutex
	at     map[types.UID]changed
	pruned time.Time
}

type changed struct {
	resourceVersion string
	at              time.Time
}

// NewChanged is a Changed with MadeTTL and the real clock.
func NewChanged() *Changed { return &Changed{TTL: MadeTTL, Clock: clock.RealClock{}} }

// Wrote records that obj, as the cache shows it, was changed or deleted just now.
func (c *Changed) Wrote(obj metav1.Object) {
	if c == nil || obj.GetUID() == "" {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.at == nil {
		c.at = map[types.UID]changed{}
	}
	now := c.Clock.Now()
	c.at[obj.GetUID()] = changed{resourceVersion: obj.GetResourceVersion(), at: now}
	if now.Sub(c.pruned) >= c.TTL {
		for uid, ch := range c.at {
			if now.Sub(ch.at) >= c.TTL {
				delete(c.at, uid)
			}
		}
		c.pruned = now
	}
}

// Pending tells whether obj, as the cache shows it, is one this process changed or deleted less
// than TTL ago and that the cache shows as it was then: the change must not be made again.
func (c *Changed) Pending(obj metav1.Object) bool {
	if c == nil {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	ch, ok := c.at[obj.GetUID()]
	if !ok {
		return false
	}
	if ch.resourceVersion != obj.GetResourceVersion() || c.Clock.Since(ch.at) >= c.TTL {
		delete(c.at, obj.GetUID())
		return false
	}
	return true
}
