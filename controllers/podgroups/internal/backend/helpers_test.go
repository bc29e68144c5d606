package backend

import (
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/pkg/addon/addontest"
	"github.com/jobset-addons/jobset-addons/pkg/addon/checks/podgroups"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// Distinct schedulerNames, so that a backend swapped for the other shows.
var (
	registry    = NewRegistry(Names{Volcano: "volcano-sched", Coscheduling: "scheduler-plugins-scheduler"})
	backends    = registry.All()
	byScheduler = registry.by
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
func jobSet(name string, annotations map[string]string, replicatedJobs ...string) *addontest.JobSetWrapper {
	w := addontest.JobSet("ns", name).UID("uid").Annotations(annotations)
	for _, rj := range replicatedJobs {
		w.ReplicatedJobs(addontest.ReplicatedJob(rj))
	}
	return w
}

// read is the JobSet's settings and gangs; an error fails the test.
func read(t *testing.T, js *jobsetv1alpha2.JobSet) (podgroups.Settings, []podgroups.Gang) {
	t.Helper()
	s, gangs, errs := podgroups.Read(js)
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
