package bench

import (
	"context"
	"fmt"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

// objectClock tells when the objects of one resource in a namespace, with some labels, reached
// a count: a watch (a metadata informer) sees each arrive, so that waiting costs the apiserver
// the same whether the bare loop or the add-on makes them. Polling with lists instead loads the
// apiserver only while the add-on works (the bare loop's creates return when done), and grows
// with the objects listed.
type objectClock struct {
	stop chan struct{}
	// arrivals: a deletion does not lower the count (watchArrivals).
	arrivals bool

	mu   sync.Mutex
	have map[string]bool
	// reached[k] is when the count last rose to k+1.
	reached []time.Time
}

// watchCount starts an objectClock on the objects that match the label and field selectors;
// Stop it when done.
func watchCount(ctx context.Context, rc *rest.Config, gvr schema.GroupVersionResource, ns string, match map[string]string, fields string) (*objectClock, error) {
	return startClock(ctx, rc, gvr, ns, match, fields, &objectClock{stop: make(chan struct{}), have: map[string]bool{}})
}

// watchArrivals is watchCount, but counts every object that ever matched: one deleted (a
// claim of a finished pod), or that stops matching, still counts.
func watchArrivals(ctx context.Context, rc *rest.Config, gvr schema.GroupVersionResource, ns string, match map[string]string, fields string) (*objectClock, error) {
	return startClock(ctx, rc, gvr, ns, match, fields, &objectClock{stop: make(chan struct{}), have: map[string]bool{}, arrivals: true})
}

func startClock(ctx context.Context, rc *rest.Config, gvr schema.GroupVersionResource, ns string, match map[string]string, fields string, c *objectClock) (*objectClock, error) {
	mc, err := metadata.NewForConfig(rc)
	if err != nil {
		return nil, err
	}
	selector := labels.SelectorFromSet(match).String()
	inf := metadatainformer.NewFilteredMetadataInformer(mc, gvr, ns, 0, cache.Indexers{}, func(o *metav1.ListOptions) {
		o.LabelSelector, o.FieldSelector = selector, fields
	}).Informer()
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { c.saw(obj, true) },
		DeleteFunc: func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			c.saw(obj, false)
		},
	}); err != nil {
		return nil, err
	}
	go inf.Run(c.stop)
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		close(c.stop)
		return nil, fmt.Errorf("watching %s in %s: not synced", gvr, ns)
	}
	return c, nil
}

func (c *objectClock) saw(obj any, present bool) {
	m, ok := obj.(metav1.Object)
	if !ok {
		return
	}
	now := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case present && !c.have[m.GetName()]:
		c.have[m.GetName()] = true
		c.reached = append(c.reached, now)
	case !present && c.have[m.GetName()] && !c.arrivals:
		delete(c.have, m.GetName())
		c.reached = c.reached[:len(c.have)]
	}
}

// count is how many objects there are now.
func (c *objectClock) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.reached)
}

// Stop ends the watch.
func (c *objectClock) Stop() { close(c.stop) }

// until waits, at most timeout, until there are n objects, and returns when the n-th arrived.
func (c *objectClock) until(n int, timeout time.Duration) (time.Time, error) {
	deadline := time.Now().Add(timeout)
	for {
		c.mu.Lock()
		got := len(c.reached)
		var at time.Time
		if got >= n {
			at = c.reached[n-1]
		}
		c.mu.Unlock()
		if got >= n {
			return at, nil
		}
		if time.Now().After(deadline) {
			return time.Time{}, fmt.Errorf("%d objects after %s, want %d", got, timeout, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
