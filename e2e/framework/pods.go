package framework

import (
	"context"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// PollPods lists pods (of opts, such as a namespace and a JobSet's label) every 50 ms and
// hands each list to seen, from a goroutine, until the stop it returns is called. stop
// returns once seen has returned for the last time.
func PollPods(ctx context.Context, c client.Client, seen func([]corev1.Pod), opts ...client.ListOption) (stop func()) {
	stopped, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			var pods corev1.PodList
			if err := c.List(ctx, &pods, opts...); err == nil {
				seen(pods.Items)
			}
			select {
			case <-stopped:
				return
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() { close(stopped) })
		<-done
	}
}

// PodReady tells whether the pod has the Ready condition True.
func PodReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}
