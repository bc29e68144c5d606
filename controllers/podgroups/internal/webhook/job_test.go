package webhook

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/jobset-addons/jobset-addons/pkg/addon/addontest"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

func jobCreate(t *testing.T, job *batchv1.Job) admission.Request {
	t.Helper()
	raw, err := json.Marshal(job)
	if err != nil {
		t.Fatal(err)
	}
	return admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{Operation: admissionv1.Create, Namespace: "ns", Object: runtime.RawExtension{Raw: raw}}}
}

// compositeJob is Job 1 of ReplicatedJob a of a composite gang's JobSet train, its pods naming
// the gang train (as the JobSet webhook leaves them) and the Job marked for the Job webhook.
func compositeJob() *batchv1.Job {
	a := addontest.ReplicatedJob("a").Replicas(2)
	a.PodSpec().SchedulingGroup = &corev1.PodSchedulingGroup{PodGroupName: ptr.To("train")}
	js := addontest.JobSet("ns", "train").ReplicatedJobs(a).Obj()
	return addontest.Job(js, "a", 1).Annotation(contract.PerJobPodGroupAnnotationKey, "true").Obj()
}

// TestJobWebhook: a composite gang's Job gets its own name as its pods' PodGroup; a Job without
// the per-job annotation is left as it is.
func TestJobWebhook(t *testing.T) {
	job := compositeJob()
	resp := JobWebhook{}.Handle(context.Background(), jobCreate(t, job))
	if !resp.Allowed || len(resp.Patches) != 1 {
		t.Fatalf("response %+v: want allowed with one patch", resp)
	}
	p := resp.Patches[0]
	got, _ := json.Marshal(p.Value)
	if p.Operation != "add" || p.Path != "/spec/template/spec/schedulingGroup" || string(got) != `{"podGroupName":"train-a-1"}` {
		t.Errorf("patch %s %s %s: want add /spec/template/spec/schedulingGroup {podGroupName: train-a-1}", p.Operation, p.Path, got)
	}

	delete(job.Annotations, contract.PerJobPodGroupAnnotationKey)
	if resp := (JobWebhook{}).Handle(context.Background(), jobCreate(t, job)); !resp.Allowed || len(resp.Patches) > 0 {
		t.Errorf("Job without the annotation: %+v, want allowed untouched", resp)
	}
}

// TestCompositeNotServed: a composite gang is refused, naming the gate, where CompositePodGroup
// was not served; admitted where it was.
func TestCompositeNotServed(t *testing.T) {
	js := addontest.JobSet("ns", "train").Annotate(schedulerKey, "kubernetes", contract.CompositeAnnotationKey, "true").ReplicatedJobs(addontest.ReplicatedJob("a")).Obj()
	w := hook(contract.SchedulerKubernetes)
	_, errs := w.Validate(context.Background(), js)
	if len(errs) != 1 || errs[0].Type != field.ErrorTypeInvalid || errs[0].Field != "metadata.annotations[podgroups.jobset-addons.io/composite]" ||
		!strings.Contains(errs[0].Detail, "CompositePodGroup") {
		t.Errorf("errors %v: want one, at the composite annotation, naming CompositePodGroup", errs)
	}
	w.Composites = true
	if _, errs := w.Validate(context.Background(), js); len(errs) > 0 {
		t.Errorf("served: errors %v", errs)
	}
}
