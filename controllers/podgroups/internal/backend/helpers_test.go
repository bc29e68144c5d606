package backend

import (
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/controllers/podgroups/internal/gang"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// Distinct schedulerNames, so that a backend swapped for the other shows.
var (
	backends    = All(Names{Volcano: "volcano-sched", Coscheduling: "scheduler-plugins-scheduler"})
	byScheduler = ByScheduler(backends)
)

const inOrder = contract.ExecutionPolicyAnnotationKey

// kv is a map of the keys and values.
func kv(kvs ...string) map[string]string {
	m := make(map[string]string, len(kvs)/2)
	for ; len(kvs) >= 2; kvs = kvs[2:] {
		m[kvs[0]] = kvs[1]
	}
	return m
}

// jobSet is a JobSet of ReplicatedJobs of the names given, each one Job of one pod.
func jobSet(name string, annotations map[string]string, replicatedJobs ...string) *jobsetv1alpha2.JobSet {
	js := &jobsetv1alpha2.JobSet{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: "uid", Annotations: annotations}}
	for _, rj := range replicatedJobs {
		pod := corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}}}}
		js.Spec.ReplicatedJobs = append(js.Spec.ReplicatedJobs, jobsetv1alpha2.ReplicatedJob{Name: rj, Replicas: 1, Template: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: pod}}})
	}
	return js
}

// read is the JobSet's settings and gangs; an error fails the test.
func read(t *testing.T, js *jobsetv1alpha2.JobSet) (gang.Settings, []gang.Gang) {
	t.Helper()
	s, gangs, errs := gang.Read(js)
	if all := errs.All(); len(all) > 0 {
		t.Fatal(all)
	}
	return s, gangs
}

// fieldErrs are "Type Field" of each error.
func fieldErrs(list field.ErrorList) []string {
	var out []string
	for _, e := range list {
		out = append(out, string(e.Type)+" "+e.Field)
	}
	return out
}

func fe(t field.ErrorType, path string) string { return string(t) + " " + path }
