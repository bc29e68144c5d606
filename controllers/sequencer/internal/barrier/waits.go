package barrier

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/jobset-addons/jobset-addons/controllers/sequencer/internal/jobsetpods"
	"github.com/jobset-addons/jobset-addons/pkg/addon"
	"github.com/jobset-addons/jobset-addons/pkg/addon/jobsets"
)

// WaitReason is the reason of jobset_addons_jobsets_waiting for a JobSet with pods waiting at a
// closed start barrier.
const WaitReason = "barrier"

// Waits are the JobSets with member pods waiting at their start barrier in pods (the barrier
// pods' cache, PodCache), from the oldest barrier container's start; c holds the JobSets and
// their Jobs.
func Waits(ctx context.Context, c, pods client.Reader) ([]addon.Wait, error) {
	var list corev1.PodList
	if err := pods.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	return jobsetpods.Waits(ctx, c, WaitReason, list.Items, func(p *corev1.Pod) (time.Time, bool) {
		return jobsets.AtBarrier(p)
	})
}
