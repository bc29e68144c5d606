package claims

import (
	"reflect"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/jobset-addons/jobset-addons/pkg/addon/addontest"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

const kep762 = `
- metadata: {name: imex-channel, labels: {team: a}}
  spec: {devices: {requests: [{name: imex-channel, exactly: {deviceClassName: imex.nvidia.com}}]}}
  containers: [worker]
- metadata: {name: shared-data}
  spec: {devices: {requests: [{name: shared-data, exactly: {deviceClassName: shared-data-resource}}]}}
  whenJobFinished: Retain
- metadata: {name: pod-only}
  spec: {devices: {requests: [{name: x, exactly: {deviceClassName: x}}]}}
  containers: []
`

// workerGroup is JobSet ns/js of ReplicatedJob worker-group (3 Jobs; init container init,
// containers worker and helper) with templates.
func workerGroup(templates string) *addontest.JobSetWrapper {
	return addontest.JobSet("ns", "js").ReplicatedJobs(
		addontest.ReplicatedJob("worker-group").Replicas(3).InitContainers("init").Containers("worker", "helper").
			JobAnnotation(contract.TemplatesAnnotationKey, templates),
	)
}

// newJob is Job 1 of workerGroup in the restart attempt given ("": without the label).
func newJob(attempt string, templates string) *batchv1.Job {
	job := addontest.Job(workerGroup(templates).Obj(), "worker-group", 1).UID("job-uid").
		Label(contract.RestartAttemptLabelKey, attempt).Obj()
	if attempt == "" {
		delete(job.Labels, contract.RestartAttemptLabelKey)
	}
	return job
}

func TestBindingsNames(t *testing.T) {
	for _, tc := range []struct {
		attempt string
		want    []string
	}{
		{"", []string{"js-worker-group-1-imex-channel", "js-worker-group-1-shared-data", "js-worker-group-1-pod-only"}},
		{"0", []string{"js-worker-group-1-imex-channel", "js-worker-group-1-shared-data", "js-worker-group-1-pod-only"}},
		{"2", []string{"js-worker-group-1-r2-imex-channel", "js-worker-group-1-r2-shared-data", "js-worker-group-1-r2-pod-only"}},
	} {
		bs, errs := Bindings(newJob(tc.attempt, kep762))
		if len(errs) > 0 {
			t.Fatalf("attempt %q: %v", tc.attempt, errs)
		}
		var got []string
		for _, b := range bs {
			got = append(got, b.ClaimName)
			if b.Shadowed {
				t.Errorf("attempt %q: %s shadowed", tc.attempt, b.ClaimName)
			}
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("attempt %q: names %v, want %v", tc.attempt, got, tc.want)
		}
	}
}

func TestBindingsErrors(t *testing.T) {
	if _, errs := Bindings(newJob("-1", kep762)); len(errs) != 1 || errs[0].Field != "metadata.labels[jobset.sigs.k8s.io/restart-attempt]" {
		t.Errorf("bad restart attempt: %v", errs)
	}
	if _, errs := Bindings(newJob("", `[{metadata: {name: Bad_Name}, spec: {}}]`)); len(errs) != 1 ||
		errs[0].Field != "metadata.annotations[resourceclaims.jobset-addons.io/templates][0].metadata.name" {
		t.Errorf("bad template name: %v", errs)
	}
}

func TestShadowed(t *testing.T) {
	job := newJob("", kep762)
	job.Spec.Template.Spec.ResourceClaims = []corev1.PodResourceClaim{
		{Name: "imex-channel", ResourceClaimTemplateName: ptr.To("users")},                // the user's: wins
		{Name: "shared-data", ResourceClaimName: ptr.To("js-worker-group-1-shared-data")}, // ours, already injected
	}
	bs, _ := Bindings(job)
	if !bs[0].Shadowed || bs[1].Shadowed || bs[2].Shadowed {
		t.Errorf("shadowed = %v %v %v, want true false false", bs[0].Shadowed, bs[1].Shadowed, bs[2].Shadowed)
	}
	spec := &job.Spec.Template.Spec
	in := Inject(spec, bs)
	if *spec.ResourceClaims[0].ResourceClaimTemplateName != "users" || len(spec.ResourceClaims) != 3 {
		t.Errorf("pod claims after Inject: %+v", spec.ResourceClaims)
	}
	if refs(spec.Containers[0]) != "shared-data" {
		t.Errorf("worker references %q: a shadowed template must add none", refs(spec.Containers[0]))
	}
	if !in.PodClaims {
		t.Error("pod-only was not added")
	}
}

func refs(c corev1.Container) string {
	s := ""
	for _, r := range c.Resources.Claims {
		if s != "" {
			s += ","
		}
		s += r.Name
	}
	return s
}

func TestInject(t *testing.T) {
	job := newJob("", kep762)
	bs, _ := Bindings(job)
	spec := &job.Spec.Template.Spec
	in := Inject(spec, bs)
	want := []corev1.PodResourceClaim{
		{Name: "imex-channel", ResourceClaimName: ptr.To("js-worker-group-1-imex-channel")},
		{Name: "shared-data", ResourceClaimName: ptr.To("js-worker-group-1-shared-data")},
		{Name: "pod-only", ResourceClaimName: ptr.To("js-worker-group-1-pod-only")},
	}
	if !reflect.DeepEqual(spec.ResourceClaims, want) {
		t.Errorf("pod claims %+v, want %+v", spec.ResourceClaims, want)
	}
	// imex-channel: worker only; shared-data: every container and init container; pod-only: none.
	for c, w := range map[string]string{"worker": "imex-channel,shared-data", "helper": "shared-data"} {
		for _, ct := range spec.Containers {
			if ct.Name == c && refs(ct) != w {
				t.Errorf("container %s references %q, want %q", c, refs(ct), w)
			}
		}
	}
	if refs(spec.InitContainers[0]) != "shared-data" {
		t.Errorf("init container references %q, want shared-data", refs(spec.InitContainers[0]))
	}
	if !reflect.DeepEqual(in, Injected{PodClaims: true, Containers: []int{0, 1}, InitContainers: []int{0}}) {
		t.Errorf("Injected = %+v", in)
	}
	if again := Inject(spec, bs); again.Any() {
		t.Errorf("a second Inject changed %+v: it must be idempotent", again)
	}
}

func TestClaim(t *testing.T) {
	job := newJob("1", kep762)
	bs, _ := Bindings(job)
	c := JobClaim(job, bs[0])
	if c.Name != "js-worker-group-1-r1-imex-channel" || c.Namespace != "ns" {
		t.Errorf("claim %s/%s", c.Namespace, c.Name)
	}
	wantLabels := map[string]string{
		"team": "a", contract.ManagedByLabelKey: contract.ResourceClaimsManagedByValue, contract.ResourceClaimTemplateLabelKey: "imex-channel",
		contract.JobSetNameLabelKey: "js", contract.ReplicatedJobNameLabelKey: "worker-group", contract.JobIndexLabelKey: "1",
	}
	if !reflect.DeepEqual(c.Labels, wantLabels) {
		t.Errorf("labels %v, want %v", c.Labels, wantLabels)
	}
	if !metav1.IsControlledBy(c, job) || *c.OwnerReferences[0].BlockOwnerDeletion {
		t.Errorf("owner references %+v: want the Job as controller, not blocking its deletion", c.OwnerReferences)
	}
	if c.Spec.Devices.Requests[0].Exactly.DeviceClassName != "imex.nvidia.com" {
		t.Errorf("spec %+v", c.Spec)
	}
	if bs[1].Template.WhenJobFinished != contract.RetentionPolicyRetain || bs[0].Template.WhenJobFinished != contract.RetentionPolicyDelete {
		t.Error("whenJobFinished not parsed or defaulted")
	}
}

func TestFinished(t *testing.T) {
	job := newJob("", kep762)
	if Finished(job) {
		t.Error("a Job without conditions finished")
	}
	job.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobFailureTarget, Status: corev1.ConditionTrue}}
	if Finished(job) {
		t.Error("FailureTarget is not finished: pods may still run")
	}
	job.Status.Conditions = append(job.Status.Conditions, batchv1.JobCondition{Type: batchv1.JobFailed, Status: corev1.ConditionTrue})
	if !Finished(job) {
		t.Error("a Failed Job is finished")
	}
}

// TestAheadAgreesWithTheJob: the claims made ahead of a Job, from the JobSet, have the names
// the Job webhook gives the Job's pods once JobSet creates it, in the same restart attempt.
func TestAheadAgreesWithTheJob(t *testing.T) {
	job := newJob("2", kep762)
	js := workerGroup(kep762).Restarts(2).Obj()
	if name := JobName("js", "worker-group", 1); name != job.Name {
		t.Fatalf("JobName = %s, want %s", name, job.Name)
	}
	ahead, errs := Ahead(js, 0, 1)
	fromJob, jobErrs := Bindings(job)
	if len(errs) > 0 || len(jobErrs) > 0 || !reflect.DeepEqual(ahead, fromJob) {
		t.Errorf("ahead %+v (%v)\nfrom the Job %+v (%v)", ahead, errs, fromJob, jobErrs)
	}
	c := Claim("ns", "js", "worker-group", 1, JobSetOwner(js), ahead[0])
	if c.Labels[contract.JobIndexLabelKey] != "1" || c.OwnerReferences[0].Kind != "JobSet" || !*c.OwnerReferences[0].Controller {
		t.Errorf("claim made ahead: labels %v, owners %+v", c.Labels, c.OwnerReferences)
	}
}
