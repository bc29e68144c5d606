// Package jobsetpods holds what the sequencer's two reconcilers, the gate release (package
// controller) and the start barrier (package barrier), both do with a JobSet's pods: patch many
// at once, remember those written that the cache does not show yet, and count the JobSets whose
// member pods wait.
package jobsetpods

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/pkg/addon"
	"github.com/jobset-addons/jobset-addons/pkg/addon/jobsets"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// Patch applies patch to each pod, workers at a time, records each patched pod (as the cache
// showed it) in tracker, and counts each pod's result in failed or done and in the objects
// metric (a pod gone is no error). Both reconcilers write pods with it: the gate release its
// gate removal, the barrier its states and nudges.
func Patch(ctx context.Context, c client.Client, workers int, pods []*corev1.Pod, patch client.Patch, tracker *addon.Changed, failed, done prometheus.Counter) error {
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

// Tracker is *c, the pods written that the cache does not show yet, made (under mu) on first
// use.
func Tracker(mu *sync.Mutex, c **addon.Changed, clk clock.Clock) *addon.Changed {
	mu.Lock()
	defer mu.Unlock()
	if *c == nil {
		*c = &addon.Changed{TTL: addon.MadeTTL, Clock: clk}
	}
	return *c
}

// Waits are the Waits of reason of the pods that wait (waiting says since when) and are members
// of their JobSet (jobsets.Members: their controller a Job the JobSet's controller made, read
// from c): a pod that anyone else made, whatever its labels, is not counted.
func Waits(ctx context.Context, c client.Reader, reason string, pods []corev1.Pod, waiting func(*corev1.Pod) (time.Time, bool)) ([]addon.Wait, error) {
	byJobSet := map[types.NamespacedName][]addon.Wait{}
	podsOf := map[types.NamespacedName][]*corev1.Pod{}
	for i := range pods {
		p := &pods[i]
		since, ok := waiting(p)
		if !ok || p.DeletionTimestamp != nil {
			continue
		}
		key := types.NamespacedName{Namespace: p.Namespace, Name: p.Labels[contract.JobSetNameLabelKey]}
		byJobSet[key] = append(byJobSet[key], addon.Wait{Reason: reason, Key: key.String(), Since: since})
		podsOf[key] = append(podsOf[key], p)
	}
	var out []addon.Wait
	for key, waits := range byJobSet {
		of, err := membersByKey(ctx, c, key)
		if err != nil {
			return nil, err
		}
		for i, p := range podsOf[key] {
			if of.JobOf(p) != nil {
				out = append(out, waits[i])
			}
		}
	}
	return out, nil
}

// membersByKey are the member Jobs of the JobSet key (none when it does not exist).
func membersByKey(ctx context.Context, c client.Reader, key types.NamespacedName) (jobsets.Members, error) {
	var js jobsetv1alpha2.JobSet
	if err := c.Get(ctx, key, &js); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("getting JobSet %s: %w", key, err)
	}
	var jobs batchv1.JobList
	if err := c.List(ctx, &jobs, client.InNamespace(key.Namespace), client.MatchingLabels{contract.JobSetNameLabelKey: key.Name}); err != nil {
		return nil, fmt.Errorf("listing Jobs of %s: %w", key, err)
	}
	return jobsets.MembersOf(&js, jobs.Items), nil
}
