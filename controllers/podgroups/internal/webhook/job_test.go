package webhook

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	coschedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"github.com/jobset-addons/jobset-addons/controllers/podgroups/internal/backend"
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
	resp := (&JobWebhook{}).Handle(context.Background(), jobCreate(t, job))
	if !resp.Allowed || len(resp.Patches) != 1 {
		t.Fatalf("response %+v: want allowed with one patch", resp)
	}
	p := resp.Patches[0]
	got, _ := json.Marshal(p.Value)
	if p.Operation != "add" || p.Path != "/spec/template/spec/schedulingGroup" || string(got) != `{"podGroupName":"train-a-1"}` {
		t.Errorf("patch %s %s %s: want add /spec/template/spec/schedulingGroup {podGroupName: train-a-1}", p.Operation, p.Path, got)
	}

	delete(job.Annotations, contract.PerJobPodGroupAnnotationKey)
	if resp := (&JobWebhook{}).Handle(context.Background(), jobCreate(t, job)); !resp.Allowed || len(resp.Patches) > 0 {
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
	w.CompositeKind = backend.CompositeKinds[1]
	if _, errs := w.Validate(context.Background(), js); len(errs) > 0 {
		t.Errorf("served: errors %v", errs)
	}
}

// TestJobWebhookHoldsTakenGang: JobSet train-stage-0 (not sequenced) was admitted while the
// sequenced JobSet train had no PodGroup for stage 0; then train made it. A Job of
// train-stage-0 is denied on CREATE and on the update that resumes it, naming the PodGroup and
// JobSet train; another update passes, and so does the Job once the PodGroup is its JobSet's.
func TestJobWebhookHoldsTakenGang(t *testing.T) {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{jobsetv1alpha2.AddToScheme, coschedv1alpha1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	js := addontest.JobSet("ns", "train-stage-0").UID("uid-mine").Annotate(schedulerKey, "coscheduling").ReplicatedJobs(addontest.ReplicatedJob("w")).Obj()
	w := hook(contract.SchedulerCoscheduling)
	if err := w.Default(request(admissionv1.Create), js); err != nil {
		t.Fatal(err)
	}
	job := addontest.Job(js, "w", 0).ControlledBy(js).Obj()
	if job.Annotations[contract.GangAnnotationKey] != "train-stage-0" {
		t.Fatalf("Job annotations %v: want the gang named", job.Annotations)
	}
	pg := func(jobSet, uid, stage string) *coschedv1alpha1.PodGroup {
		p := &coschedv1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "train-stage-0", Labels: map[string]string{
			contract.ManagedByLabelKey: contract.PodGroupsManagedByValue, contract.JobSetNameLabelKey: jobSet}}}
		if stage != "" {
			p.Labels[contract.PodGroupStageLabelKey] = stage
		}
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "jobset.x-k8s.io/v1alpha2", Kind: "JobSet", Name: jobSet, UID: types.UID(uid), Controller: ptr.To(true)}}
		return p
	}
	update := func(oldSuspend, newSuspend bool) admission.Request {
		req := jobCreate(t, job)
		old := job.DeepCopy()
		old.Spec.Suspend = ptr.To(oldSuspend)
		resumed := job.DeepCopy()
		resumed.Spec.Suspend = ptr.To(newSuspend)
		oldRaw, _ := json.Marshal(old)
		newRaw, _ := json.Marshal(resumed)
		req.Operation, req.OldObject.Raw, req.Object.Raw = admissionv1.Update, oldRaw, newRaw
		return req
	}
	jw := func(objs ...client.Object) *JobWebhook {
		c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(append(objs, js)...).Build()
		return &JobWebhook{Reader: c, APIReader: c, Backends: w.Backends, Installed: w.Installed}
	}
	taken := jw(pg("train", "uid-train", "0"))
	for name, req := range map[string]admission.Request{"create": jobCreate(t, job), "resume": update(true, false)} {
		resp := taken.Handle(context.Background(), req)
		if resp.Allowed || !strings.Contains(resp.Result.Message, "the coscheduling PodGroup train-stage-0 exists and was made for JobSet train (uid uid-train) for stage=0, held by JobSet train") ||
			!strings.Contains(resp.Result.Message, "Job train-stage-0-w-0 is not created or resumed") {
			t.Errorf("%s: %+v, want denied naming the PodGroup and JobSet train", name, resp.Result)
		}
	}
	if resp := taken.Handle(context.Background(), update(false, false)); !resp.Allowed {
		t.Errorf("another update: %+v, want allowed", resp.Result)
	}
	for name, h := range map[string]*JobWebhook{"its own": jw(pg("train-stage-0", "uid-mine", "")), "none": jw(), "no reader": {}} {
		if resp := h.Handle(context.Background(), jobCreate(t, job)); !resp.Allowed {
			t.Errorf("%s: %+v, want allowed", name, resp.Result)
		}
	}
}

// TestValidateTakenBeyondDryRun: the kubernetes backend's dry run makes the Workload only;
// JobSet train-stage-0's PodGroup train-stage-0, JobSet train's stage 0, refuses it at the
// scheduler annotation all the same, naming JobSet train. A PodGroup of its own name left by an
// earlier JobSet train-stage-0 does not.
func TestValidateTakenBeyondDryRun(t *testing.T) {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{jobsetv1alpha2.AddToScheme, schedulingv1beta1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	pg := func(jobSet, stage string) *schedulingv1beta1.PodGroup {
		p := &schedulingv1beta1.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "train-stage-0", Labels: map[string]string{
			contract.ManagedByLabelKey: contract.PodGroupsManagedByValue, contract.JobSetNameLabelKey: jobSet}}}
		if stage != "" {
			p.Labels[contract.PodGroupStageLabelKey] = stage
		}
		return p
	}
	js := addontest.JobSet("ns", "train-stage-0").Annotate(schedulerKey, "kubernetes").ReplicatedJobs(addontest.ReplicatedJob("w")).Obj()
	w := hook(contract.SchedulerKubernetes)
	w.Reader = fake.NewClientBuilder().WithScheme(scheme).WithObjects(pg("train", "0")).Build()
	_, errs := w.Validate(context.Background(), js)
	if len(errs) != 1 || errs[0].Field != schedulerPath || !strings.Contains(errs[0].Detail, "the kubernetes PodGroup train-stage-0 exists and was made for JobSet train for stage=0") {
		t.Errorf("errors %v: want one at the scheduler annotation naming the PodGroup and JobSet train", errs)
	}
	w.Reader = fake.NewClientBuilder().WithScheme(scheme).WithObjects(pg("train-stage-0", "")).Build()
	if _, errs := w.Validate(context.Background(), js); len(errs) > 0 {
		t.Errorf("a PodGroup an earlier JobSet of the name left: errors %v, want none", errs)
	}
}
