package controller

import (
	"context"
	"fmt"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/controllers/sequencer/internal/sequence"
	"github.com/jobset-addons/jobset-addons/pkg/addon"
	"github.com/jobset-addons/jobset-addons/pkg/addon/jobsets"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// Reasons of jobset_addons_jobsets_waiting: a JobSet with pods gated until their stage's
// predecessors hold (WaitReason), or with pods waiting at a closed start barrier (BarrierReason).
const (
	WaitReason    = "stage"
	BarrierReason = "barrier"
)

// BarrierWaits are the JobSets with member pods waiting at their start barrier in pods (the
// barrier pods' cache, BarrierPodCache), from the oldest barrier container's start; c holds the
// JobSets and their Jobs.
func BarrierWaits(ctx context.Context, c, pods client.Reader) ([]addon.Wait, error) {
	var list corev1.PodList
	if err := pods.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	return memberWaits(ctx, c, BarrierReason, list.Items, func(p *corev1.Pod) (time.Time, bool) {
		return jobsets.AtBarrier(p)
	})
}

// Waits is Options.Waits: the JobSets with gated member pods in the cache, from the oldest
// pod's creation.
func Waits(ctx context.Context, c client.Reader) ([]addon.Wait, error) {
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	return memberWaits(ctx, c, WaitReason, pods.Items, func(p *corev1.Pod) (time.Time, bool) {
		return p.CreationTimestamp.Time, sequence.HasGate(p.Spec.SchedulingGates)
	})
}

// memberWaits are the Waits of reason of the pods that wait (waiting) and are members of their
// JobSet (jobsets.Members: their controller a Job the JobSet's controller made, read from c):
// a pod that anyone else made, whatever its labels, is not counted.
func memberWaits(ctx context.Context, c client.Reader, reason string, pods []corev1.Pod, waiting func(*corev1.Pod) (time.Time, bool)) ([]addon.Wait, error) {
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
