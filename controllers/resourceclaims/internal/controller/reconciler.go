// Package controller is the resourceclaims reconciler: for every Job of a JobSet whose
// templates annotation the Job carries, it creates the Job's ResourceClaims (owned by the Job)
// as soon as the Job exists, and deletes them once the Job has finished unless a template says
// Retain.
package controller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/tools/events"
	"k8s.io/component-base/featuregate"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/controllers/resourceclaims/internal/claims"
	"github.com/jobset-addons/jobset-addons/pkg/addon"
	"github.com/jobset-addons/jobset-addons/pkg/addon/jobsets"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// Reconciler reconciles JobSets whose ReplicatedJobs carry the templates annotation.
type Reconciler struct {
	// Client reads JobSets, their Jobs and the add-on's claims from the cache, and writes.
	Client client.Client
	// APIReader reads a claim that collided on create (a user's claim is not in the cache).
	APIReader client.Reader
	// Adopter patches claims made ahead of their Jobs over to the Jobs. It has a rate limit of
	// its own, so that this housekeeping never takes the budget claim creation needs.
	Adopter  client.Writer
	Recorder events.EventRecorder
	Gates    featuregate.FeatureGate
	// Workers is how many API calls one reconcile makes at once.
	Workers int
	// made holds the claims created that the cache does not show yet.
	made *addon.Made
	// changed holds the claims adopted or deleted that the cache shows as they were before: a
	// reconcile before the cache catches up (on a sibling's event) would adopt or delete them
	// again, a refused patch and a read, or a 404 and a second ResourceClaimsDeleted Event
	// (make bench ADDON=scale: 1.0 patch, 1.0 get and 1.05 deletes per JobSet of 4 claims).
	changed *addon.Changed

	// told holds, per Job (or claim), the Warnings told about it, and per JobSet the refusals
	// told (addon.Refusals), so that each is told once per process rather than on every
	// reconcile.
	told addon.Told
}

// SetupWithManager registers the reconciler for JobSets with templates, their Jobs and the
// claims it manages.
func (r *Reconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, concurrency int) error {
	// told keys JobSets and Jobs by UID.
	if err := addon.ForgetGone(mgr, addon.DefaultForgetEvery, &r.told, &jobsetv1alpha2.JobSetList{}, &batchv1.JobList{}); err != nil {
		return err
	}
	var err error
	if r.made, err = addon.ObserveMade(ctx, mgr.GetCache(), &resourcev1.ResourceClaim{}); err != nil {
		return err
	}
	r.changed = addon.NewChanged()
	jobHasTemplates := predicate.NewPredicateFuncs(func(o client.Object) bool {
		_, ok := o.GetAnnotations()[contract.TemplatesAnnotationKey]
		return ok
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named("resourceclaims").
		WatchesRawSource(addon.For(mgr, &jobsetv1alpha2.JobSet{}, predicate.NewPredicateFuncs(func(o client.Object) bool {
			return HasTemplates(o.(*jobsetv1alpha2.JobSet))
		}))).
		WatchesRawSource(addon.Watches(mgr, &batchv1.Job{}, handler.EnqueueRequestsFromMapFunc(jobsets.JobSetOf), jobHasTemplates)).
		WatchesRawSource(addon.Watches(mgr, &resourcev1.ResourceClaim{}, handler.EnqueueRequestsFromMapFunc(jobsets.JobSetOf))).
		WithOptions(controller.Options{MaxConcurrentReconciles: concurrency}).
		Complete(addon.Busy(r))
}

// HasTemplates tells whether a ReplicatedJob of js carries the templates annotation.
func HasTemplates(js *jobsetv1alpha2.JobSet) bool {
	for _, rj := range js.Spec.ReplicatedJobs {
		if _, ok := rj.Template.Annotations[contract.TemplatesAnnotationKey]; ok {
			return true
		}
	}
	return false
}

// Reconcile makes the claims of the JobSet's Jobs match their templates and their state.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, err error) {
	start := time.Now()
	defer func() { addon.ObserveReconcile(reconcileDuration, time.Since(start), err) }()
	if !r.Gates.Enabled(claims.Gate) {
		return ctrl.Result{}, nil
	}
	// Deleting: the garbage collector takes the Jobs and, with them, the claims.
	ctx, js, ok, err := addon.ReconcileJobSet(ctx, r.Client, req.NamespacedName)
	if err != nil || !ok {
		if js != nil {
			r.told.Forget(js.UID) // the refusals told of it
		}
		return ctrl.Result{}, err
	}
	r.checkJobSet(js)

	// Before the cache is read: a claim created by this process that arrives after the read is
	// then still pending.
	made := r.made.PendingNow()
	jobs := &batchv1.JobList{}
	if err := r.Client.List(ctx, jobs, client.InNamespace(js.Namespace), client.MatchingLabels{contract.JobSetNameLabelKey: js.Name}); err != nil {
		reconcileErrors.WithLabelValues("list").Inc()
		return ctrl.Result{}, err
	}
	list := &resourcev1.ResourceClaimList{}
	if err := r.Client.List(ctx, list, client.InNamespace(js.Namespace), client.MatchingLabels{
		contract.ManagedByLabelKey: contract.ResourceClaimsManagedByValue, contract.JobSetNameLabelKey: js.Name,
	}); err != nil {
		reconcileErrors.WithLabelValues("list").Inc()
		return ctrl.Result{}, err
	}
	existing := make(map[string]*resourcev1.ResourceClaim, len(list.Items))
	written := sets.New[string]()
	for i := range list.Items {
		existing[list.Items[i].Name] = &list.Items[i]
	}
	// A claim this process created that the cache does not show yet is not created again; the
	// watch event of its arrival brings the next reconcile, or, should none come, the requeue.
	waiting := false
	// A claim this process adopted or deleted that the cache shows as it was is left alone
	// until the cache catches up, the same way.
	for name, c := range existing {
		if r.changed.Pending(c) {
			delete(existing, name)
			written.Insert(name)
			waiting = true
		}
	}
	missing := func(name string) bool {
		if written.Has(name) {
			return false
		}
		if made.Has(types.NamespacedName{Namespace: js.Namespace, Name: name}) {
			waiting = true
			return false
		}
		return true
	}

	byName := make(map[string]*batchv1.Job, len(jobs.Items))
	var work []action
	for i := range jobs.Items {
		job := &jobs.Items[i]
		if !metav1.IsControlledBy(job, js) {
			continue
		}
		byName[job.Name] = job
		if claims.HasTemplates(job) && job.DeletionTimestamp.IsZero() {
			work = append(work, r.plan(js, job, existing, missing)...)
		}
	}
	work = append(work, r.ahead(js, byName, existing, work, missing)...)
	if err := r.run(ctx, js, work); err != nil {
		return ctrl.Result{}, err
	}
	if waiting {
		return ctrl.Result{RequeueAfter: addon.MadeTTL}, nil
	}
	return ctrl.Result{}, nil
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

// checkJobSet tells, with a Warning event, about templates of the JobSet that do not parse:
// they were written past the validating webhook. Nothing is deleted for them; the Jobs keep
// the copies they were created with, and the Job webhook refuses new Jobs that carry them.
func (r *Reconciler) checkJobSet(js *jobsetv1alpha2.JobSet) {
	for i, rj := range js.Spec.ReplicatedJobs {
		value, ok := rj.Template.Annotations[contract.TemplatesAnnotationKey]
		if !ok {
			continue
		}
		if _, errs := claims.Parse(value, contract.ReplicatedJobAnnotationPath(i, contract.TemplatesAnnotationKey)); len(errs) > 0 && r.told.Once(js.UID, ReasonInvalid) {
			reconcileErrors.WithLabelValues("invalid").Inc()
			addon.Tell(r.Recorder, js, nil, corev1.EventTypeWarning, ReasonInvalid, actionSkip,
				"The resource claim templates of ReplicatedJob %s are invalid; new Jobs of it are refused until it is fixed: %v", rj.Name, errs.ToAggregate())
		}
	}
}

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
// owner (an earlier Job of the same name) deleted, to be made again once it is gone.
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
	var shadowed []string
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
	return work
}

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
		a := work[i]
		switch {
		case a.create != nil:
			r.create(ctx, js, a, &out)
		case a.adopt != nil:
			r.adopt(ctx, a, &out)
		default:
			err := r.Client.Delete(ctx, a.delete, client.Preconditions{UID: &a.delete.UID})
			switch {
			case err == nil || apierrors.IsNotFound(err):
				r.changed.Wrote(a.delete)
				claimsDeleted.WithLabelValues(a.cause).Inc()
				addon.CountObject(KindClaim, addon.ActionDeleted, 1)
				out.add(a.jobName, "deleted", a.delete.Name, nil)
			default:
				reconcileErrors.WithLabelValues("delete").Inc()
				addon.CountObject(KindClaim, addon.ActionFailed, 1)
				out.add(a.jobName, "failed", a.delete.Name, fmt.Errorf("deleting %s: %w", a.delete.Name, err))
			}
		}
		return nil
	})
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
	}
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

// create creates a claim. One that exists already is ours for this owner or made ahead for
// this JobSet (the cache was behind: nothing to do), ours for an earlier owner of the same
// name (deleted, to be made again), or not ours (left alone, and told).
func (r *Reconciler) create(ctx context.Context, js *jobsetv1alpha2.JobSet, a action, out *outcome) {
	err := r.Client.Create(ctx, a.create)
	if err == nil {
		r.made.Created(a.create)
		claimsCreated.Inc()
		addon.CountObject(KindClaim, addon.ActionCreated, 1)
		out.add(a.jobName, "created", a.create.Name, nil)
		return
	}
	if addon.NamespaceTerminating(err) {
		return // the JobSet goes with its namespace
	}
	if addon.Classify(err) == addon.Refused {
		reconcileErrors.WithLabelValues("refused").Inc()
		addon.CountObject(KindClaim, addon.ActionFailed, 1)
		out.refused.Add(a.create.Labels[contract.ResourceClaimTemplateLabelKey], a.create.Name, err)
		out.refusedJobs.Store(a.create.Name, a.jobName)
		return
	}
	if !apierrors.IsAlreadyExists(err) {
		reconcileErrors.WithLabelValues("create").Inc()
		addon.CountObject(KindClaim, addon.ActionFailed, 1)
		out.add(a.jobName, "failed", a.create.Name, fmt.Errorf("creating %s: %w", a.create.Name, err))
		return
	}
	found := &resourcev1.ResourceClaim{}
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(a.create), found); err != nil {
		reconcileErrors.WithLabelValues("create").Inc()
		out.add(a.jobName, "failed", a.create.Name, fmt.Errorf("reading %s, which exists: %w", a.create.Name, err))
		return
	}
	switch {
	case found.Labels[contract.ManagedByLabelKey] != contract.ResourceClaimsManagedByValue:
		claimsSkipped.WithLabelValues("name-taken").Inc()
		if r.told.Once(a.create.OwnerReferences[0].UID, ReasonNameTaken+"/"+found.Name) { // by its Job: a user's claim is not in the cache
			out.add(a.jobName, "taken", found.Name, nil)
		}
	case controlledBy(found, a.create.OwnerReferences[0].UID):
		// Made by an earlier reconcile that the cache does not show yet.
		r.made.Created(found)
	case controlledBy(found, js.UID):
		// Made ahead of this Job; the reconcile that the cache's catching up brings adopts it.
		r.made.Created(found)
	default:
		// Ours, left by an earlier Job or JobSet of the same name: it goes, and the claim is
		// made again once the watch sees it gone. Until then the Job's pods wait for it.
		if found.DeletionTimestamp.IsZero() {
			if err := r.Client.Delete(ctx, found, client.Preconditions{UID: &found.UID}); client.IgnoreNotFound(err) != nil {
				reconcileErrors.WithLabelValues("delete").Inc()
				out.add(a.jobName, "failed", found.Name, fmt.Errorf("deleting %s, left by an earlier owner: %w", found.Name, err))
				return
			}
			claimsDeleted.WithLabelValues("stale").Inc()
			addon.CountObject(KindClaim, addon.ActionDeleted, 1)
			out.add(a.jobName, "deleted", found.Name, nil)
		}
	}
}

// adopt makes a claim made ahead of its Job the Job's: its only owner becomes the Job. A JSON
// patch tests the owners first, so that it applies only to owners as they were seen; the
// claim's status, which the scheduler and the kubelet change, does not get in the way.
func (r *Reconciler) adopt(ctx context.Context, a action, out *outcome) {
	ops := []map[string]any{
		{"op": "test", "path": "/metadata/ownerReferences", "value": a.adopt.OwnerReferences},
		{"op": "replace", "path": "/metadata/ownerReferences", "value": []metav1.OwnerReference{claims.JobOwner(a.job)}},
	}
	data, err := json.Marshal(ops)
	if err == nil {
		err = r.Adopter.Patch(ctx, a.adopt.DeepCopy(), client.RawPatch(types.JSONPatchType, data))
	}
	if apierrors.IsInvalid(err) {
		// The test failed: the cache showed owners the claim no longer has. Adopted already
		// (by an earlier reconcile the cache has not caught up with) is what was wanted.
		found := &resourcev1.ResourceClaim{}
		if getErr := r.APIReader.Get(ctx, client.ObjectKeyFromObject(a.adopt), found); getErr == nil && controlledBy(found, a.job.UID) {
			return
		}
	}
	if err != nil {
		reconcileErrors.WithLabelValues("adopt").Inc()
		addon.CountObject(KindClaim, addon.ActionFailed, 1)
		out.add(a.jobName, "failed", a.adopt.Name, fmt.Errorf("adopting %s for its Job: %w", a.adopt.Name, err))
		return
	}
	r.changed.Wrote(a.adopt)
	claimsAdopted.Inc()
	addon.CountObject(KindClaim, addon.ActionUpdated, 1)
}

// controlledBy tells whether o's controller has the UID uid.
func controlledBy(o metav1.Object, uid types.UID) bool {
	ref := metav1.GetControllerOf(o)
	return ref != nil && ref.UID == uid
}

func sorted(s []string) []string {
	sort.Strings(s)
	return s
}
