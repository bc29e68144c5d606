package webhook

import (
	"context"
	"fmt"
	"sync"
	"time"

	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ClaimsProbe tells whether the apiserver keeps a PodGroup's spec.resourceClaims, which it drops
// without the feature gate DRAWorkloadResourceClaims (the gate cannot be read through the API;
// its effect can): a dry-run create of a PodGroup with one claim, in the namespace at hand.
// The answer is kept for ClaimsProbeTTL, so that admitting many JobSets costs one dry run, and
// a gate turned on later is seen within that time.
type ClaimsProbe struct {
	// Client makes the dry runs (create on podgroups.scheduling.k8s.io, as the controller has).
	Client client.Client
	Clock  clock.PassiveClock

	mu   sync.Mutex
	at   time.Time
	kept bool
	why  string
}

// ClaimsProbeTTL is how long a probe's answer is kept.
const ClaimsProbeTTL = time.Minute

// Kept tells whether the apiserver keeps a PodGroup's claims; when not, why says what it does
// ("drops a PodGroup's spec.resourceClaims", or the dry run's error), for a refusal's message.
func (p *ClaimsProbe) Kept(ctx context.Context, namespace string) (kept bool, why string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.Clock.Now()
	if !p.at.IsZero() && now.Sub(p.at) < ClaimsProbeTTL {
		return p.kept, p.why
	}
	pg := &schedulingv1beta1.PodGroup{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "podgroups-claims-probe-", Namespace: namespace},
		Spec: schedulingv1beta1.PodGroupSpec{
			SchedulingPolicy: schedulingv1beta1.PodGroupSchedulingPolicy{Gang: &schedulingv1beta1.GangSchedulingPolicy{MinCount: 1}},
			ResourceClaims:   []schedulingv1beta1.PodGroupResourceClaim{{Name: "probe", ResourceClaimName: ptr.To("probe")}},
		},
	}
	if err := p.Client.Create(ctx, pg, client.DryRunAll); err != nil {
		// Not kept: the next JobSet asks again.
		return false, fmt.Sprintf("could not be asked whether it keeps a PodGroup's spec.resourceClaims (a dry-run create failed: %v)", err)
	}
	p.at, p.kept, p.why = now, len(pg.Spec.ResourceClaims) > 0, ""
	if !p.kept {
		p.why = "drops a PodGroup's spec.resourceClaims"
	}
	return p.kept, p.why
}
