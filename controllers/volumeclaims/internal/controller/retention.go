package controller

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/util/sets"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/pkg/addon"
	"github.com/jobset-addons/jobset-addons/pkg/addon/checks/volumeclaims"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// state is what the JobSet's status says for retention.
type state struct {
	completed, failed bool
	// succeeded: ReplicatedJobs all of whose Jobs succeeded.
	succeeded sets.Set[string]
}

// jobSetChanged passes the JobSet updates that change what the reconciler or the expiry goes
// by (addon.ChangesOf): of the status, only stateOf, which covers finished (expiry).
var jobSetChanged = addon.ChangesOf(func(js *jobsetv1alpha2.JobSet) string {
	st := stateOf(js)
	return fmt.Sprint(st.completed, st.failed, sets.List(st.succeeded))
})

func stateOf(js *jobsetv1alpha2.JobSet) state {
	st := state{
		completed: apimeta.IsStatusConditionTrue(js.Status.Conditions, string(jobsetv1alpha2.JobSetCompleted)),
		failed:    apimeta.IsStatusConditionTrue(js.Status.Conditions, string(jobsetv1alpha2.JobSetFailed)),
		succeeded: sets.New[string](),
	}
	for _, s := range js.Status.ReplicatedJobsStatus {
		if rj := volumeclaims.ReplicatedJob(js, s.Name); rj != nil && s.Succeeded >= rj.Replicas {
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
func (st state) action(c volumeclaims.Claim) action {
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

// sort splits the claims by what retention does with them: ensure (made if missing, adopted if
// not), remove (deleted now), dropped (deleted, or to be: followed until gone). existing are
// the add-on's PVCs of the JobSet.
func (st state) sort(claims []volumeclaims.Claim, existing map[string]*corev1.PersistentVolumeClaim) (ensure, remove, dropped []volumeclaims.Claim) {
	for _, c := range claims {
		switch st.action(c) {
		case keep:
			ensure = append(ensure, c)
		case drop:
			dropped = append(dropped, c)
			if pvc, ok := existing[c.Name]; ok && pvc.DeletionTimestamp.IsZero() {
				remove = append(remove, c)
			}
		case leave:
			// Retained: not made again, but one that exists is the JobSet's all the same (a
			// JobSet that finished before its first reconcile reused it: adopt it).
			if pvc, ok := existing[c.Name]; ok && pvc.DeletionTimestamp.IsZero() {
				ensure = append(ensure, c)
			}
		}
	}
	return ensure, remove, dropped
}
