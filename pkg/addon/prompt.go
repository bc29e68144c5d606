package addon

import (
	"context"
	"sync"

	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// promptCache is the manager's cache, whose WaitForCacheSync returns the moment every informer
// made through it has synced. controller-runtime's checks every 100 ms (client-go's
// WaitForCacheSync), and the manager waits on it before it takes the Lease: at a start, up to
// 100 ms lost before any worker runs (make bench ADDON=podgroups, cold start).
type promptCache struct {
	cache.Cache
	mu       sync.Mutex
	informer map[cache.Informer]bool
}

// newPromptCache is the manager's NewCache.
func newPromptCache(cfg *rest.Config, opts cache.Options) (cache.Cache, error) {
	c, err := cache.New(cfg, opts)
	if err != nil {
		return nil, err
	}
	return &promptCache{Cache: c, informer: map[cache.Informer]bool{}}, nil
}

func (c *promptCache) made(inf cache.Informer, err error) (cache.Informer, error) {
	if err == nil {
		c.mu.Lock()
		c.informer[inf] = true
		c.mu.Unlock()
	}
	return inf, err
}

func (c *promptCache) GetInformer(ctx context.Context, obj client.Object, opts ...cache.InformerGetOption) (cache.Informer, error) {
	return c.made(c.Cache.GetInformer(ctx, obj, opts...))
}

// IndexField makes the informer through the prompt cache, then indexes it.
func (c *promptCache) IndexField(ctx context.Context, obj client.Object, field string, extract client.IndexerFunc) error {
	if _, err := c.GetInformer(ctx, obj, cache.BlockUntilSynced(false)); err != nil {
		return err
	}
	return c.Cache.IndexField(ctx, obj, field, extract)
}

// WaitForCacheSync waits for the informers made through GetInformer (every one the add-ons
// make), then asks the cache, which finds them synced at its first check; one made otherwise
// (GetInformerForKind, or a read of a kind not cached yet) is waited for as before.
func (c *promptCache) WaitForCacheSync(ctx context.Context) bool {
	c.mu.Lock()
	synced := make([]toolscache.DoneChecker, 0, len(c.informer))
	for inf := range c.informer {
		synced = append(synced, inf.HasSyncedChecker())
	}
	c.mu.Unlock()
	return toolscache.WaitFor(ctx, "", synced...) && c.Cache.WaitForCacheSync(ctx)
}
