package controller

import (
	"fmt"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/utils/ptr"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/pkg/addon/checks/sequencer"
	"github.com/jobset-addons/jobset-addons/pkg/addon/jobsets"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// progress counts, per ReplicatedJob, the Jobs of one restart attempt that are Complete, and
// those that are ready or Complete.
type progress map[string]struct{ complete, readyOrComplete int32 }

// tally counts the Jobs of the attempt. A Job counts as ready as upstream JobSet counts it:
// ready + succeeded pods reach min(parallelism, completions).
func tally(jobs []batchv1.Job, attempt int32) progress {
	p := progress{}
	for i := range jobs {
		j := &jobs[i]
		if jobsets.AttemptOf(j.Labels) != attempt || j.DeletionTimestamp != nil {
			continue
		}
		rj := j.Labels[contract.ReplicatedJobNameLabelKey]
		c := p[rj]
		switch {
		case jobsets.JobHas(j, batchv1.JobComplete):
			c.complete++
			c.readyOrComplete++
		case jobsets.JobHas(j, batchv1.JobFailed):
		default:
			pods := ptr.Deref(j.Spec.Parallelism, 1)
			if j.Spec.Completions != nil && *j.Spec.Completions < pods {
				pods = *j.Spec.Completions
			}
			if j.Status.Succeeded+ptr.Deref(j.Status.Ready, 0) >= pods {
				c.readyOrComplete++
			}
		}
		p[rj] = c
	}
	return p
}

// holds tells whether the predecessor reached the status: Complete when as many of its Jobs as
// it has replicas are Complete, Ready when as many are ready or Complete.
func (p progress) holds(js *jobsetv1alpha2.JobSet, d contract.Dependency) bool {
	rj := sequencer.ReplicatedJob(js, d.Name)
	if rj == nil {
		return false
	}
	c := p[d.Name]
	if d.Status == contract.DependencyReady {
		return c.readyOrComplete >= rj.Replicas
	}
	return c.complete >= rj.Replicas
}

// decision is what one reconcile releases.
type decision struct {
	// released is the released annotation as it must be: the earlier releases of the attempt
	// and the new ones.
	released contract.Released
	// newly are the gated stages released by this decision.
	newly []contract.Stage
}

// decide releases every gated stage all of whose predecessors hold in the attempt, and keeps
// what prev (the annotation) released in the same attempt: a release is never taken back, so
// a stage whose Ready predecessor loses a pod keeps running and its new pods are released.
// prev of another attempt is dropped: after a restart the sequence starts again. (A suspend
// empties prev before the JobSet resumes: see withdraw.)
func decide(js *jobsetv1alpha2.JobSet, stages []contract.Stage, prev contract.Released, p progress, attempt int32) decision {
	d := decision{released: contract.Released{RestartAttempt: attempt, ReplicatedJobs: []string{}}}
	if prev.RestartAttempt == attempt {
		d.released = d.released.With(prev.ReplicatedJobs...)
	}
	for _, s := range sequencer.GatedStages(stages) {
		if d.released.StageReleased(s) {
			continue
		}
		ok := true
		for _, dep := range s.DependsOn {
			ok = ok && p.holds(js, dep)
		}
		if ok {
			d.released = d.released.With(s.ReplicatedJobs...)
			d.newly = append(d.newly, s)
		}
	}
	return d
}

// describe says what a stage waited for, for an event: "initializer Complete, model Ready".
func describe(deps []contract.Dependency) string {
	parts := make([]string, len(deps))
	for i, d := range deps {
		parts[i] = fmt.Sprintf("%s %s", d.Name, d.Status)
	}
	return strings.Join(parts, ", ")
}

// strictest is Complete when the stage waited for any predecessor to complete, else Ready.
func strictest(deps []contract.Dependency) contract.DependencyStatus {
	for _, d := range deps {
		if d.Status == contract.DependencyComplete {
			return contract.DependencyComplete
		}
	}
	return contract.DependencyReady
}
