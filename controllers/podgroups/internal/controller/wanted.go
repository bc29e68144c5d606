package controller

import (
	"context"
	"fmt"
	"slices"

	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/pkg/addon/checks/podgroups"
	"github.com/jobset-addons/jobset-addons/pkg/addon/jobsets"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// wanted are the gangs whose PodGroup should exist now, and, for the others that may exist,
// why they should not:
//   - none once the JobSet has finished;
//   - a JobSet that is not sequenced: its one gang, suspended or not (Kueue may change the
//     demand while suspended; the PodGroup follows);
//   - a sequenced JobSet: each stage that may run in the current restart attempt (stage 0; a
//     stage the sequencer released; a stage upstream dependsOn holds back once upstream has
//     created its Jobs) and has not finished yet (all its Jobs of the attempt Complete).
//
// early are the gangs of the stages that may not run yet: the Job webhook makes a stage's gang
// as a Job of it is created once it may run (podgroups.MayRun, from the API server's JobSet), so
// its gang object can come into the cache before that Job, or before the JobSet that says the
// stage may run, does (keptWhileEarly).
func (r *Reconciler) wanted(ctx context.Context, js *jobsetv1alpha2.JobSet, gangs []podgroups.Gang) (_ []podgroups.Gang, why map[string]string, early sets.Set[string], _ error) {
	why, early = map[string]string{}, sets.New[string]()
	if jobsets.Finished(js) {
		for _, g := range gangs {
			why[g.Name] = "the JobSet finished"
		}
		return nil, why, early, nil
	}
	if len(gangs) == 1 {
		return gangs, why, early, nil
	}
	var jobs batchv1.JobList
	if err := r.Client.List(ctx, &jobs, client.InNamespace(js.Namespace), client.MatchingFields{JobSetNameIndex: js.Name}); err != nil {
		reconcileErrors.WithLabelValues("list").Inc()
		return nil, nil, nil, fmt.Errorf("listing Jobs: %w", err)
	}
	jobs.Items = jobsets.OwnedJobs(js, jobs.Items)
	attempt := jobsets.CurrentAttempt(js, jobs.Items)
	created, complete := map[string]int32{}, map[string]int32{}
	for i := range jobs.Items {
		j := &jobs.Items[i]
		if jobsets.AttemptOf(j.Labels) != attempt {
			continue
		}
		rj := j.Labels[contract.ReplicatedJobNameLabelKey]
		created[rj]++
		if jobsets.JobHas(j, batchv1.JobComplete) {
			complete[rj]++
		}
	}
	var want []podgroups.Gang
	for _, g := range gangs {
		st := g.Stage
		made := slices.ContainsFunc(st.ReplicatedJobs, func(rj string) bool { return created[rj] > 0 })
		mayRun := podgroups.MayRun(js, st, attempt, made)
		finished := true
		for _, name := range st.ReplicatedJobs {
			if complete[name] < jobsets.ReplicatedJob(js, name).Replicas {
				finished = false
			}
		}
		switch {
		case finished:
			why[g.Name] = fmt.Sprintf("stage %d finished in restart attempt %d", st.Index, attempt)
		case !mayRun:
			why[g.Name] = fmt.Sprintf("stage %d may not run yet in restart attempt %d", st.Index, attempt)
			early.Insert(g.Name)
		default:
			want = append(want, g)
		}
	}
	return want, why, early, nil
}

// wants are what a reconcile makes: the gangs wanted now, each composite gang (a
// CompositePodGroup) apart from the PodGroups (units), and why each other gang is not wanted.
type wants struct {
	gangs, composites, units []podgroups.Gang
	why                      map[string]string
	early                    sets.Set[string] // wanted's early, and their children
}

// wants splits the wanted gangs (wanted) into composite gangs and units; a composite gang not
// wanted has its Jobs' PodGroups not wanted, for its reason.
func (r *Reconciler) wants(ctx context.Context, js *jobsetv1alpha2.JobSet, gangs []podgroups.Gang) (wants, error) {
	want, why, early, err := r.wanted(ctx, js, gangs)
	if err != nil {
		return wants{}, err
	}
	for _, g := range gangs {
		if reason, unwanted := why[g.Name]; unwanted {
			for _, c := range g.Children() {
				why[c.Name] = reason
				if early.Has(g.Name) {
					early.Insert(c.Name)
				}
			}
		}
	}
	w := wants{gangs: want, units: podgroups.Units(want), why: why, early: early}
	for _, g := range want {
		if len(g.Jobs) > 0 {
			w.composites = append(w.composites, g)
		}
	}
	return w, nil
}
