package jobsets

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
)

func TestRunState(t *testing.T) {
	running := &jobsetv1alpha2.JobSet{}
	restarted := &jobsetv1alpha2.JobSet{Status: jobsetv1alpha2.JobSetStatus{Restarts: 1}}
	failed := &jobsetv1alpha2.JobSet{Status: jobsetv1alpha2.JobSetStatus{Conditions: []metav1.Condition{{Type: string(jobsetv1alpha2.JobSetFailed), Status: metav1.ConditionTrue}}}}
	counted := &jobsetv1alpha2.JobSet{Status: jobsetv1alpha2.JobSetStatus{ReplicatedJobsStatus: []jobsetv1alpha2.ReplicatedJobStatus{{Name: "w", Ready: 2}}}}
	if RunState(running) == RunState(restarted) || RunState(running) == RunState(failed) {
		t.Errorf("a restart or a failure left the run state as it was: %q, %q, %q", RunState(running), RunState(restarted), RunState(failed))
	}
	if RunState(running) != RunState(counted) {
		t.Errorf("the Jobs' counts changed the run state: %q, %q", RunState(running), RunState(counted))
	}
}
