package addon

import (
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/pkg/addon/addontest"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

func TestJobsOfJobSets(t *testing.T) {
	js := addontest.JobSet("", "js").ReplicatedJobs(addontest.ReplicatedJob("w").Pods(2)).Obj()
	job := func() *batchv1.Job {
		j := addontest.Job(js, "w", 0).Name("j").Succeeded(1).
			Annotation("keep", "yes").Annotation("jobset.sigs.k8s.io/job-key", "0123").Annotation(contract.TemplatesAnnotationKey, "[]").Obj()
		j.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "jobset"}}
		return j
	}
	byObject := JobsOfJobSets(func(j *batchv1.Job) corev1.PodTemplateSpec {
		if j.Annotations["keep"] != "yes" {
			return corev1.PodTemplateSpec{}
		}
		return corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: j.Spec.Template.Spec.Containers}}
	})
	if !byObject.Label.Matches(labelSet(job().Labels)) || byObject.Label.Matches(labelSet(nil)) {
		t.Errorf("selector %s: want the Jobs with the jobset-name label only", byObject.Label)
	}
	kept, err := byObject.Transform(job())
	if err != nil {
		t.Fatal(err)
	}
	if k := kept.(*batchv1.Job); len(k.Spec.Template.Spec.Containers) != 1 || k.ManagedFields != nil {
		t.Errorf("a Job whose template is read: template %+v, managed fields %v; want the template, no managed fields", k.Spec.Template, k.ManagedFields)
	}
	other := job()
	other.Annotations = nil
	stripped, err := byObject.Transform(other)
	if err != nil {
		t.Fatal(err)
	}
	s := stripped.(*batchv1.Job)
	if len(s.Spec.Template.Spec.Containers) != 0 || s.ManagedFields != nil {
		t.Errorf("a Job whose template is not read kept its template or managed fields: %+v", s)
	}
	if k := kept.(*batchv1.Job); len(k.Annotations) != 1 || k.Annotations[contract.TemplatesAnnotationKey] != "[]" {
		t.Errorf("annotations %v: want the add-ons' own only", k.Annotations)
	}
	if *s.Spec.Parallelism != 2 || *s.Spec.Completions != 2 || s.Status.Succeeded != 1 || s.Labels[contract.JobSetNameLabelKey] != "js" {
		t.Errorf("the transform lost what the add-ons read: %+v", s)
	}
	if got, _ := JobsOfJobSets(nil).Transform(job()); len(got.(*batchv1.Job).Spec.Template.Spec.Containers) != 0 {
		t.Error("JobsOfJobSets(nil) kept a pod template")
	}
}

func labelSet(m map[string]string) labels.Set { return labels.Set(m) }

func TestJobSetsUsing(t *testing.T) {
	uses := func(js *jobsetv1alpha2.JobSet) bool {
		_, ok := js.Annotations["mine"]
		return ok || (len(js.Spec.ReplicatedJobs) > 0 && js.Spec.ReplicatedJobs[0].Template.Annotations["mine"] != "")
	}
	jobSet := func(annotations, templateAnnotations map[string]string) *jobsetv1alpha2.JobSet {
		w := addontest.ReplicatedJob("w").Replicas(2)
		for k, v := range templateAnnotations {
			w.JobAnnotation(k, v)
		}
		js := addontest.JobSet("", "js").Label("l", "v").Annotations(annotations).ReplicatedJobs(w).Restarts(1).Obj()
		js.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}
		return js
	}
	transform := JobSetsUsing(uses).Transform
	for name, js := range map[string]*jobsetv1alpha2.JobSet{
		"by its annotation":          jobSet(map[string]string{"mine": "x"}, nil),
		"by its template annotation": jobSet(nil, map[string]string{"mine": "x"}),
	} {
		got, err := transform(js)
		if err != nil {
			t.Fatal(err)
		}
		k := got.(*jobsetv1alpha2.JobSet)
		if len(k.Spec.ReplicatedJobs) != 1 || k.Status.Restarts != 1 || k.ManagedFields != nil {
			t.Errorf("%s: a JobSet that uses the add-on lost its spec or status, or kept managed fields: %+v", name, k)
		}
	}
	got, err := transform(jobSet(map[string]string{"other": "x"}, map[string]string{"other": "x"}))
	if err != nil {
		t.Fatal(err)
	}
	k := got.(*jobsetv1alpha2.JobSet)
	if len(k.Spec.ReplicatedJobs) != 0 || k.Status.Restarts != 0 || k.ManagedFields != nil {
		t.Errorf("a JobSet that does not use the add-on kept its spec, status or managed fields: %+v", k)
	}
	if k.Name != "js" || k.Labels["l"] != "v" || k.Annotations["other"] != "x" {
		t.Errorf("a JobSet that does not use the add-on lost its metadata: %+v", k.ObjectMeta)
	}
	if uses(k) {
		t.Error("what is kept of a JobSet that does not use the add-on uses it")
	}
}
