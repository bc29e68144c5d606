package podgroups

import (
	"strings"

	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
)

// TrainJobOwner is the name of the Kubeflow Trainer TrainJob that controls the JobSet (its
// controller ownerReference, group trainer.kubeflow.org, kind TrainJob), or "".
func TrainJobOwner(js *jobsetv1alpha2.JobSet) string {
	for _, o := range js.OwnerReferences {
		if o.Controller != nil && *o.Controller && o.Kind == "TrainJob" && groupOf(o.APIVersion) == "trainer.kubeflow.org" {
			return o.Name
		}
	}
	return ""
}

func groupOf(apiVersion string) string {
	group, _, _ := strings.Cut(apiVersion, "/")
	return group
}
