package controller

import (
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/util/sets"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/controllers/volumeclaims/internal/policy"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// state is what the JobSet's status says for retention.
type state struct {
	completed, failed bool
	// succeeded: ReplicatedJobs all of whose Jobs succeeded.
	succeeded sets.Set[string]
}

func stateOf(js *jobsetv1alpha2.JobSet) state {
	st := state{
		completed: apimeta.IsStatusConditionTrue(js.Status.Conditions, string(jobsetv1alpha2.JobSetCompleted)),
		failed:    apimeta.IsStatusConditionTrue(js.Status.Conditions, string(jobsetv1alpha2.JobSetFailed)),
		succeeded: sets.New[string](),
	}
	for _, s := range js.Status.ReplicatedJobsStatus {
		if rj := policy.ReplicatedJob(js, s.Name); rj != nil && s.Succeeded >= rj.Replicas {
			st.succeeded.Insert(s.Name)
		}
	}
	return st
}

type action int

const (
	keep  action = iota // the claim must exist
	drop                // retention deletes it
	leave               // finished, retained: neither created nor deleted
)

// action decides for one claim. A shared claim lives until the JobSet completes or fails; a
// per-pod claim until every targeted ReplicatedJob succeeded, or the JobSet completed or
// failed for good. A failed Job that the JobSet restarts is not a failure: the JobSet is
// not Failed, and its claims stay (checkpoints survive restarts).
func (st state) action(c policy.Claim) action {
	done, failed := st.completed, st.failed
	if !c.Shared() && !done && !failed {
		done = true
		for _, t := range c.Targets {
			done = done && st.succeeded.Has(t)
		}
	}
	switch {
	case failed && c.Retention.WhenFailed == contract.RetentionPolicyDelete:
		return drop
	case done && !failed && c.Retention.WhenComplete == contract.RetentionPolicyDelete:
		return drop
	case done || failed:
		return leave
	}
	return keep
}
