package webhook

import (
	"encoding/json"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/jobset-addons/jobset-addons/pkg/addon/addontest"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// FuzzJobSetWebhooks: the mutating and validating JobSet webhooks, from the KEP-2437 examples,
// with the three backends installed.
func FuzzJobSetWebhooks(f *testing.F) {
	s := addontest.JobSetScheme(f)
	w := hook(contract.SchedulerVolcano, contract.SchedulerCoscheduling, contract.SchedulerKubernetes)
	addontest.FuzzWebhooks(f, addontest.Examples(f, "../../../../examples/podgroups", "JobSet"), map[string]*admission.Webhook{
		"mutate JobSet":   admission.WithDefaulter(s, w),
		"validate JobSet": admission.WithValidator(s, w),
	})
}

// FuzzJobWebhook: the Job webhook, from a Job of a composite gang.
func FuzzJobWebhook(f *testing.F) {
	raw, err := json.Marshal(&batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "train-a-1", Namespace: "ns", Annotations: map[string]string{contract.PerJobPodGroupAnnotationKey: "true"}},
		Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			SchedulingGroup: &corev1.PodSchedulingGroup{PodGroupName: ptr.To("train")}, Containers: []corev1.Container{{Name: "c"}},
		}}},
	})
	if err != nil {
		f.Fatal(err)
	}
	addontest.FuzzWebhooks(f, [][]byte{raw}, map[string]*admission.Webhook{"mutate Job": {Handler: JobWebhook{}}})
}
