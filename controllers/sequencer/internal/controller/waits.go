package controller

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/jobset-addons/jobset-addons/controllers/sequencer/internal/jobsetpods"
	"github.com/jobset-addons/jobset-addons/pkg/addon"
	"github.com/jobset-addons/jobset-addons/pkg/addon/checks/sequencer"
)

// WaitReason is the reason of jobset_addons_jobsets_waiting for a JobSet with pods gated until
// their stage's predecessors hold.
const WaitReason = "stage"

// Waits is Options.Waits: the JobSets with gated member pods in the cache, from the oldest
// pod's creation.
func Waits(ctx context.Context, c client.Reader) ([]addon.Wait, error) {
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	return jobsetpods.Waits(ctx, c, WaitReason, pods.Items, func(p *corev1.Pod) (time.Time, bool) {
		return p.CreationTimestamp.Time, sequencer.HasGate(p.Spec.SchedulingGates)
	})
}
