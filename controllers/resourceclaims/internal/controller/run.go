package controller

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/pkg/addon"
)

// outcome gathers, per Job and kind, the claims one reconcile handled, for one event each.
type outcome struct {
	mu     sync.Mutex
	byJob  map[string]map[string][]string // job -> kind (created, deleted, failed, taken) -> claims
	errors []string
	// refused are the creates the API server refused for good, told apart (once per cause);
	// refusedJobs the Job of each.
	refused     addon.Refusals
	refusedJobs sync.Map
}

func (o *outcome) add(job, kind, claim string, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.byJob == nil {
		o.byJob = map[string]map[string][]string{}
	}
	if o.byJob[job] == nil {
		o.byJob[job] = map[string][]string{}
	}
	o.byJob[job][kind] = append(o.byJob[job][kind], claim)
	if err != nil {
		o.errors = append(o.errors, err.Error())
	}
}

// run makes the calls, r.Workers at a time, and tells what it did with one event per Job and
// kind. It returns an error, for a retry, if any call failed.
func (r *Reconciler) run(ctx context.Context, js *jobsetv1alpha2.JobSet, work []action) error {
	if len(work) == 0 {
		return nil
	}
	var out outcome
	// Each call's failure is gathered in out, to be told with one event per Job and kind.
	_ = addon.ForEach(ctx, r.Workers, len(work), func(i int) error {
		switch a := work[i]; {
		case a.create != nil:
			r.create(ctx, js, a, &out)
		case a.adopt != nil:
			r.adopt(ctx, a, &out)
		default:
			r.delete(ctx, a, &out)
		}
		return nil
	})
	r.tellDone(js, work, &out)
	jobOf := map[string]string{}
	out.refusedJobs.Range(func(k, v any) bool { jobOf[k.(string)] = v.(string); return true })
	refused := r.tellRefused(js, &out.refused, jobOf)
	if len(out.errors) > 0 {
		errs := sorted(out.errors)
		addon.Tell(r.Recorder, js, nil, corev1.EventTypeWarning, ReasonFailed, actionCreate, "%d claim operations failed, will retry; the first: %s", len(errs), errs[0])
		return errors.Join(fmt.Errorf("%d claim operations failed: %s", len(errs), strings.Join(errs, "; ")), refused)
	}
	return refused
}

// tellDone tells, with one event per Job and kind, the claims created, deleted and found taken.
func (r *Reconciler) tellDone(js *jobsetv1alpha2.JobSet, work []action, out *outcome) {
	jobNames := make([]string, 0, len(out.byJob))
	for j := range out.byJob {
		jobNames = append(jobNames, j)
	}
	sort.Strings(jobNames)
	// A claim made ahead of its Job is told about with the Job it is for as the related
	// object, though the Job does not exist yet: events about different Jobs stay apart.
	related := map[string]runtime.Object{}
	for _, a := range work {
		switch {
		case a.job != nil:
			related[a.jobName] = a.job
		case a.jobName != "":
			related[a.jobName] = &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: js.Namespace, Name: a.jobName}}
		}
	}
	for _, j := range jobNames {
		kinds := out.byJob[j]
		if c := kinds["created"]; len(c) > 0 {
			ahead := ""
			if job, ok := related[j].(*batchv1.Job); ok && job.UID == "" {
				ahead = " (ahead of it)"
			}
			addon.Tell(r.Recorder, js, related[j], corev1.EventTypeNormal, ReasonCreated, actionCreate, "Created ResourceClaims for Job %s%s: %s", j, ahead, strings.Join(sorted(c), ", "))
		}
		if c := kinds["deleted"]; len(c) > 0 {
			addon.Tell(r.Recorder, js, related[j], corev1.EventTypeNormal, ReasonDeleted, actionDelete, "Deleted ResourceClaims of Job %s: %s", j, strings.Join(sorted(c), ", "))
		}
		if c := kinds["taken"]; len(c) > 0 {
			addon.Tell(r.Recorder, js, related[j], corev1.EventTypeWarning, ReasonNameTaken, actionSkip,
				"ResourceClaims %s exist and were not made by resourceclaims: they are left as they are, and the pods of Job %s use them", strings.Join(sorted(c), ", "), j)
		}
		if c := kinds["foreign"]; len(c) > 0 {
			addon.Tell(r.Recorder, js, related[j], corev1.EventTypeWarning, ReasonNameTaken, actionSkip,
				"ResourceClaims %s exist and were made for another Job (names are joined with \"-\"): they are neither changed nor deleted; rename the ReplicatedJob or the template so that the names differ", strings.Join(sorted(c), ", "))
		}
	}
}
