package webhook

import (
	"context"

	"gomodules.xyz/jsonpatch/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/jobset-addons/jobset-addons/pkg/addon"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// MutateJobPath is the Job mutating webhook (CREATE), scoped to JobSet Jobs that carry
// contract.PerJobPodGroupAnnotationKey.
const MutateJobPath = "/mutate-batch-v1-job"

// JobWebhook names, on CREATE, a composite gang's Job's own PodGroup (contract.JobPodGroupName,
// the Job's name) in its pod template's spec.schedulingGroup.podGroupName, where the JobSet
// webhook put the gang's name: the pod template of a ReplicatedJob is one for all its Jobs, and
// only the Job knows which it is. It reads nothing but the Job.
type JobWebhook struct{}

var _ admission.Handler = JobWebhook{}

// Handle implements admission.Handler.
func (JobWebhook) Handle(_ context.Context, req admission.Request) admission.Response {
	job := &batchv1.Job{}
	if resp, done := addon.DecodeCreate(req, job); done {
		return resp
	}
	if job.Annotations[contract.PerJobPodGroupAnnotationKey] != contract.EnabledValue {
		return admission.Allowed("")
	}
	name, err := contract.JobPodGroupName(job.Name)
	if err != nil {
		return admission.Denied("podgroups: " + err.Error())
	}
	sg := corev1.PodSchedulingGroup{PodGroupName: ptr.To(name)}
	return admission.Patched("", jsonpatch.NewOperation("add", "/spec/template/spec/schedulingGroup", sg))
}
