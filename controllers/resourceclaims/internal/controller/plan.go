package controller

import (
	"strconv"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/controllers/resourceclaims/internal/claims"
	"github.com/jobset-addons/jobset-addons/pkg/addon"
	"github.com/jobset-addons/jobset-addons/pkg/addon/jobsets"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// action is one API call a reconcile makes for a Job.
type action struct {
	job     *batchv1.Job // nil for a claim made ahead of its Job
	jobName string
	create  *resourcev1.ResourceClaim // to create, or
	delete  *resourcev1.ResourceClaim // to delete (with its UID as precondition), or
	adopt   *resourcev1.ResourceClaim // made ahead, to be owned by job
	cause   string                    // of a delete: finished, stale or unused
}

// plan lists what the Job needs: its claims created (or, made ahead, adopted) while it runs,
// deleted once it finished (unless Retain), and a claim of ours of the right name but another
// owner (an earlier Job of the same name) deleted, to be made again once it is gone. One of
// ours made for another Job (contract.Identity.Of: Foreign) is left alone, and told.
func (r *Reconciler) plan(js *jobsetv1alpha2.JobSet, job *batchv1.Job, existing map[string]*resourcev1.ResourceClaim, missing func(string) bool) []action {
	bindings, errs := claims.Bindings(job)
	if len(errs) > 0 {
		if r.told.Once(job.UID, ReasonInvalid) {
			reconcileErrors.WithLabelValues("invalid").Inc()
			addon.Tell(r.Recorder, js, job, corev1.EventTypeWarning, ReasonInvalid, actionSkip, "Job %s has invalid resource claim templates; no claims are made or deleted for it: %v", job.Name, errs.ToAggregate())
		}
		return nil
	}
	finished := claims.Finished(job)
	var work []action
	var shadowed, foreign []string
	for _, b := range bindings {
		if b.Shadowed {
			shadowed = append(shadowed, b.Template.Name)
			continue
		}
		c := existing[b.ClaimName]
		switch {
		case c == nil:
			if !finished && missing(b.ClaimName) {
				work = append(work, action{job: job, jobName: job.Name, create: claims.JobClaim(job, b)})
			}
		case !c.DeletionTimestamp.IsZero():
			// Going; a stale claim is made again once it is gone.
		case claims.Identity(claims.JobClaim(job, b)).Of(c) == contract.Foreign:
			// Made for another Job of the JobSet (names are joined with "-"): neither adopted
			// nor deleted.
			foreign = append(foreign, c.Name+" (made for "+claims.Identity(claims.JobClaim(job, b)).Holder(c)+")")
			r.waiting.For(client.ObjectKeyFromObject(js), c)
		case metav1.IsControlledBy(c, js):
			if finished && b.Template.WhenJobFinished == contract.RetentionPolicyDelete {
				work = append(work, action{job: job, jobName: job.Name, delete: c, cause: "finished"})
			} else {
				work = append(work, action{job: job, jobName: job.Name, adopt: c})
			}
		case !metav1.IsControlledBy(c, job):
			work = append(work, action{job: job, jobName: job.Name, delete: c, cause: "stale"})
		case finished && b.Template.WhenJobFinished == contract.RetentionPolicyDelete:
			work = append(work, action{job: job, jobName: job.Name, delete: c, cause: "finished"})
		}
	}
	if len(shadowed) > 0 && r.told.Once(job.UID, ReasonShadowed) {
		claimsSkipped.WithLabelValues("shadowed").Add(float64(len(shadowed)))
		addon.Tell(r.Recorder, js, job, corev1.EventTypeWarning, ReasonShadowed, actionSkip,
			"The pod template of Job %s has its own resourceClaims of the names %s, which win: those templates give it no claim", job.Name, strings.Join(shadowed, ", "))
	}
	if len(foreign) > 0 && r.told.Once(job.UID, ReasonNameTaken) {
		claimsSkipped.WithLabelValues("name-taken").Add(float64(len(foreign)))
		addon.Tell(r.Recorder, js, job, corev1.EventTypeWarning, ReasonNameTaken, actionSkip,
			"ResourceClaims %s of Job %s's names exist and were made for another Job (names are joined with \"-\"): they are neither changed nor deleted; rename the ReplicatedJob or the template so that the names differ", strings.Join(foreign, ", "), job.Name)
	}
	return work
}

// ahead plans the claims of the Jobs JobSet has yet to create in its current attempt, so that
// they exist before the Jobs and their pods: owned by the JobSet until their Job appears and
// adopts them. Claims made ahead that no Job will adopt any more (the JobSet restarted,
// finished, or shrank) are deleted.
// planned is what plan decided for the existing Jobs: the claims it adopts or deletes are its.
// missing tells whether a claim the cache does not show is to be created.
func (r *Reconciler) ahead(js *jobsetv1alpha2.JobSet, jobs map[string]*batchv1.Job, existing map[string]*resourcev1.ResourceClaim, planned []action, missing func(string) bool) []action {
	finished := jobsets.Finished(js)
	wanted := sets.New[string]()
	var work []action
	for i, rj := range js.Spec.ReplicatedJobs {
		if _, ok := rj.Template.Annotations[contract.TemplatesAnnotationKey]; !ok || finished {
			continue
		}
		for j := range int(rj.Replicas) {
			name := claims.JobName(js.Name, rj.Name, j)
			if jobs[name] != nil {
				continue // the Job's own templates rule its claims (plan)
			}
			bindings, errs := claims.Ahead(js, i, j)
			if len(errs) > 0 {
				break // checkJobSet told
			}
			for _, b := range bindings {
				if b.Shadowed {
					continue
				}
				wanted.Insert(b.ClaimName)
				if existing[b.ClaimName] == nil && missing(b.ClaimName) {
					work = append(work, action{jobName: name, create: claims.Claim(js.Namespace, js.Name, rj.Name, j, claims.JobSetOwner(js), b)})
				}
			}
		}
	}
	touched := sets.New[string]()
	for _, a := range planned {
		if a.adopt != nil {
			touched.Insert(a.adopt.Name)
		}
		if a.delete != nil {
			touched.Insert(a.delete.Name)
		}
	}
	for name, c := range existing {
		if metav1.IsControlledBy(c, js) && !wanted.Has(name) && c.DeletionTimestamp.IsZero() && !touched.Has(name) {
			job := claims.JobName(js.Name, c.Labels[contract.ReplicatedJobNameLabelKey], atoi(c.Labels[contract.JobIndexLabelKey]))
			work = append(work, action{jobName: job, delete: c, cause: "unused"})
		}
	}
	return work
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}
