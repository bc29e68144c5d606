package volumeclaims

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// validateNodeLostGrace refuses a nodeLostGracePeriod shorter than
// contract.MinVolumeNodeLostGracePeriod. It is an admission check, not the contract parser's:
// a JobSet admitted before the minimum existed keeps working, and the controller waits at least
// the minimum for it (NodeLostGrace).
func validateNodeLostGrace(p *contract.VolumeClaimPolicy, path *field.Path, refused sets.Set[string]) field.ErrorList {
	g := p.RetentionPolicy.NodeLostGracePeriod
	gp := path.Child("retentionPolicy", "nodeLostGracePeriod")
	if g == nil || g.Duration < 0 || g.Duration >= contract.MinVolumeNodeLostGracePeriod || refused.Has(gp.String()) {
		return nil // not a duration, or negative: the parser refused it
	}
	return field.ErrorList{field.Invalid(gp, g.Duration.String(),
		fmt.Sprintf("must be at least %s: a node is judged unreachable by its missed heartbeats, and a shorter wait would act on a control plane restart or a brief network blip as on a lost machine", contract.MinVolumeNodeLostGracePeriod))}
}

// NodeLostGrace is how long the controller waits, on its own clock, for a node of r that is
// NotReady or unreachable: nodeLostGracePeriod, and never less than the minimum.
func NodeLostGrace(r contract.VolumeRetentionPolicy) time.Duration {
	if r.NodeLostGracePeriod == nil {
		return contract.DefaultVolumeNodeLostGracePeriod
	}
	return max(r.NodeLostGracePeriod.Duration, contract.MinVolumeNodeLostGracePeriod)
}
