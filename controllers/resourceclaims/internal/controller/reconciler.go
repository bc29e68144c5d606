// Package controller is the resourceclaims reconciler: for every Job of a JobSet whose
// templates annotation the Job carries, it creates the Job's ResourceClaims (owned by the Job)
// as soon as the Job exists, and deletes them once the Job has finished unless a template says
// Retain.
package controller

import (
	"context"
	"fmt"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

// JobSetNameIndex indexes Jobs and ResourceClaims by their JobSet's name (jobsets.NameIndex):
// a reconcile lists its JobSet's, not the whole namespace's.
const JobSetNameIndex = jobsets.NameIndex

// IndexFields registers the field indexes the reconciler lists by.
func IndexFields(ctx context.Context, mgr ctrl.Manager) error {
	for _, o := range []client.Object{&batchv1.Job{}, &resourcev1.ResourceClaim{}} {
		if err := mgr.GetFieldIndexer().IndexField(ctx, o, JobSetNameIndex, jobsets.IndexByName); err != nil {
			return fmt.Errorf("indexing %T: %w", o, err)
		}
	}
	return nil
}

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
	// waiting holds, per claim made for another Job under the name of one of a JobSet's Jobs'
	// claims, the JobSets that wait for it to go; retry, the JobSets whose claim went, which
	// their next reconcile nudges (addon.Retries), after its own calls: the Job's claims made
	// ahead exist by the time JobSet creates the Job.
	waiting addon.Waiting
	retry   addon.Retries
	// first tells the claims the Job webhook made ahead (for a Job that came before the
	// reconcile that would have made them) from those this reconciler made, so that each is
	// told as created when its Job adopts it.
	first addon.MadeFirst
}

// SetupWithManager registers the reconciler for JobSets with templates, their Jobs and the
// claims it manages.
func (r *Reconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, concurrency int) error {
	r.first = addon.MadeFirst{Started: time.Now().Truncate(time.Second), Told: &r.told}
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
		}), jobSetChanged)).
		WatchesRawSource(addon.Watches(mgr, &batchv1.Job{}, handler.EnqueueRequestsFromMapFunc(jobsets.JobSetOf), jobHasTemplates, jobChanged)).
		WatchesRawSource(addon.Watches(mgr, &resourcev1.ResourceClaim{}, handler.EnqueueRequestsFromMapFunc(jobsets.JobSetOf), claimChanged)).
		WatchesRawSource(addon.Watches(mgr, &resourcev1.ResourceClaim{}, r.waiting.Gone(r.retry.Add))).
		WithOptions(controller.Options{MaxConcurrentReconciles: concurrency}).
		Complete(addon.Busy(r))
}

// What a reconcile reads (addon.ChangesOf): of the JobSet's status, whether it finished and its
// restarts (the attempt its Jobs' claims are named for); of its spec, its ReplicatedJobs'
// templates and replicas; of its Jobs' status, whether they finished; of its claims, nothing
// but their metadata. The scheduler's and kube-controller-manager's writes of a claim's
// allocation and reservations, the Job controller's of a Job's pod counts and JobSet's of its
// Jobs' counts bring no reconcile.
var (
	jobSetChanged = addon.ChangesOf(func(js *jobsetv1alpha2.JobSet) string {
		state := jobsets.RunState(js)
		// and the templates and replicas, however the spec changed: a spec written straight
		// to etcd, past the API server, keeps its generation.
		for _, rj := range js.Spec.ReplicatedJobs {
			state += fmt.Sprintf("\x00%s\x00%d\x00%s", rj.Name, rj.Replicas, rj.Template.Annotations[contract.TemplatesAnnotationKey])
		}
		return state
	})
	jobChanged   = addon.ChangesOf(func(job *batchv1.Job) string { return fmt.Sprint(claims.Finished(job)) })
	claimChanged = addon.ChangesOf[*resourcev1.ResourceClaim](nil)
)

// HasTemplates tells whether a ReplicatedJob of js carries the templates annotation.
func HasTemplates(js *jobsetv1alpha2.JobSet) bool {
	for _, rj := range js.Spec.ReplicatedJobs {
		if _, ok := rj.Template.Annotations[contract.TemplatesAnnotationKey]; ok {
			return true
		}
	}
	return false
}

// Reconcile makes the claims of the JobSet's Jobs match their templates and their state: read
// the Jobs and the add-on's claims, plan what each Job (and each Job yet to come) needs, make
// the calls, and look again once the cache shows what this process wrote.
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
		if err == nil {
			r.waiting.Forget(req.NamespacedName)
			r.retry.Forget(req.NamespacedName)
		}
		return ctrl.Result{}, err
	}
	r.checkJobSet(js)
	// Before the cache is read: a claim created by this process that arrives after the read is
	// then still pending.
	made := r.made.PendingNow()
	jobs, list, err := r.read(ctx, js)
	if err != nil {
		return ctrl.Result{}, err
	}
	k := r.known(js, list, made)
	if err := r.run(ctx, js, r.planAll(js, jobs, k)); err != nil {
		return ctrl.Result{}, err
	}
	if err := r.retry.Retry(ctx, r.Client, js, contract.ResourceClaimsRetryAnnotationKey); err != nil {
		reconcileErrors.WithLabelValues("retry").Inc()
		return ctrl.Result{}, err
	}
	if k.waiting {
		return ctrl.Result{RequeueAfter: addon.MadeTTL}, nil
	}
	return ctrl.Result{}, nil
}

// read lists the JobSet's Jobs and the claims resourceclaims made for it, from the cache, by
// JobSetNameIndex (IndexFields).
func (r *Reconciler) read(ctx context.Context, js *jobsetv1alpha2.JobSet) ([]batchv1.Job, []resourcev1.ResourceClaim, error) {
	jobs := &batchv1.JobList{}
	if err := r.Client.List(ctx, jobs, client.InNamespace(js.Namespace), client.MatchingFields{JobSetNameIndex: js.Name}); err != nil {
		reconcileErrors.WithLabelValues("list").Inc()
		return nil, nil, err
	}
	list := &resourcev1.ResourceClaimList{}
	if err := r.Client.List(ctx, list, client.InNamespace(js.Namespace), client.MatchingFields{JobSetNameIndex: js.Name},
		client.MatchingLabels{contract.ManagedByLabelKey: contract.ResourceClaimsManagedByValue}); err != nil {
		reconcileErrors.WithLabelValues("list").Inc()
		return nil, nil, err
	}
	return jobs.Items, list.Items, nil
}

// planAll plans what each Job the JobSet controls needs (plan), then the claims of the Jobs
// still to come (ahead).
func (r *Reconciler) planAll(js *jobsetv1alpha2.JobSet, jobs []batchv1.Job, k *known) []action {
	byName := make(map[string]*batchv1.Job, len(jobs))
	var work []action
	for i := range jobs {
		job := &jobs[i]
		if !metav1.IsControlledBy(job, js) {
			continue
		}
		byName[job.Name] = job
		if claims.HasTemplates(job) && job.DeletionTimestamp.IsZero() {
			work = append(work, r.plan(js, job, k.existing, k.missing)...)
		}
	}
	return append(work, r.ahead(js, byName, k.existing, work, k.missing)...)
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
