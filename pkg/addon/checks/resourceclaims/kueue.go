package resourceclaims

import (
	"fmt"
	"strings"

	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// Warnings tells the user of a JobSet queued by Kueue (it names a LocalQueue) that Kueue
// does not count the devices of the claims resourceclaims makes. Kueue builds its Workload from
// the JobSet's pod templates and counts devices only from them, per pod (ResourceClaimTemplates,
// extended resources backed by a DeviceClass); resourceclaims adds its claims to each Job at
// creation, after Kueue has made the Workload, and one claim is shared by the Job's pods, which
// Kueue has no way to count once per Job. So a ClusterQueue's device quota is not charged for
// them (docs/install.md, "With Kueue").
func Warnings(js *jobsetv1alpha2.JobSet) []string {
	queue := js.Labels[contract.KueueQueueNameLabelKey]
	if queue == "" {
		return nil
	}
	var rjs []string
	for _, rj := range js.Spec.ReplicatedJobs {
		if _, ok := rj.Template.Annotations[contract.TemplatesAnnotationKey]; ok {
			rjs = append(rjs, rj.Name)
		}
	}
	if len(rjs) == 0 {
		return nil
	}
	return []string{fmt.Sprintf("resourceclaims: Kueue does not count the devices of the claims made for ReplicatedJobs %s (%s): "+
		"the JobSet names LocalQueue %q, and Kueue counts devices only from the pod templates of the JobSet (ResourceClaimTemplates and DeviceClass-backed extended resources, per pod), "+
		"while these claims are added to each Job when it is created, one shared by the Job's pods; "+
		"a ClusterQueue's device quota (deviceClassMappings) is not charged for them, and Kueue may admit this JobSet while its devices are taken: its pods then wait in the scheduler, "+
		"holding the rest of their quota. See docs/install.md, With Kueue",
		strings.Join(rjs, ", "), contract.TemplatesAnnotationKey, queue)}
}
