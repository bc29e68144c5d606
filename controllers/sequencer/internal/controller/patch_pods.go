package controller

import (
	"context"
	"fmt"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/jobset-addons/jobset-addons/pkg/addon"
)

// patchPods applies patch to each pod, workers at a time, records each patched pod (as the cache
// showed it) in tracker, and counts each pod's result in failed or done and in the objects
// metric (a pod gone is no error). Both reconcilers write pods with it: the sequencer's gate
// removal, the barrier's states and nudges.
func patchPods(ctx context.Context, c client.Client, workers int, pods []*corev1.Pod, patch client.Patch, tracker *addon.Changed, failed, done prometheus.Counter) error {
	return addon.ForEach(ctx, workers, len(pods), func(i int) error {
		p := pods[i]
		before := metav1.ObjectMeta{UID: p.UID, ResourceVersion: p.ResourceVersion} // the patch answers into p
		err := c.Patch(ctx, p, patch)
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			failed.Inc()
			addon.CountObject("Pod", addon.ActionFailed, 1)
			return fmt.Errorf("patching pod %s: %w", p.Name, err)
		}
		done.Inc()
		addon.CountObject("Pod", addon.ActionUpdated, 1)
		tracker.Wrote(&before)
		return nil
	})
}

// madeOnFirstUse is *c, the pods written that the cache does not show yet, made (under mu) on
// first use.
func madeOnFirstUse(mu *sync.Mutex, c **addon.Changed, clk clock.Clock) *addon.Changed {
	mu.Lock()
	defer mu.Unlock()
	if *c == nil {
		*c = &addon.Changed{TTL: addon.MadeTTL, Clock: clk}
	}
	return *c
}
