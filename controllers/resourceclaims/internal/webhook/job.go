package webhook

import (
	"context"
	"fmt"
	"strconv"

	"gomodules.xyz/jsonpatch/v2"
	batchv1 "k8s.io/api/batch/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/component-base/featuregate"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/controllers/resourceclaims/internal/claims"
	"github.com/jobset-addons/jobset-addons/pkg/addon"
	"github.com/jobset-addons/jobset-addons/pkg/addon/jobsets"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// JobWebhook adds to a JobSet Job's pod template, on CREATE, the claims its templates give it
// (claims.Inject), as JSON patch operations. It reads nothing but the Job and the add-on's
// cache: no API call, as it is on the path of every Job a JobSet with templates creates. A Job
// whose templates do not parse is denied: its pods must not run without their claims.
//
// Claims, when set, is the cache of the add-on's own claims: a Job one of whose claims exists
// there and was made for another Job (claims.Identity: names are joined with "-", so Jobs of
// two JobSets can give one name) is denied, so that its pods never share that Job's devices;
// JobSet creates it again with back-off, and the reconciler tells the JobSet
// (ResourceClaimNameTaken). A claim made ahead for the Job, or left by an earlier Job of the
// same JobSet, ReplicatedJob and index (a Job re-created, a JobSet of the same name), passes:
// the reconciler makes it the Job's, or makes it again.
//
// A claim the cache does not hold may be made any moment by another JobSet of a colliding
// name, and the Job's pods would then get that Job's devices: so the webhook makes it itself
// (Client), as the reconciler makes a claim ahead of its Job (owned by the JobSet, adopted by
// the Job once it exists), and the first create wins (addon.MakeFirst). A create that collides
// with another Job's claim denies the Job as above; one with a user's claim passes (the pods
// use it); one that fails otherwise (a quota) denies the Job, naming the claim, until it can
// be made. A dry run makes nothing (the chart declares sideEffects NoneOnDryRun).
//
// A Job's owner reference and labels are whatever its creator wrote, not the JobSet's word: a
// claim is made only for a Job its JobSet makes (jobSet). The JobSet its controller reference
// names must exist (JobSets, or the API server when the cache does not show it yet), with that
// UID and the name of the Job's jobset-name label, have the ReplicatedJob of its
// replicatedjob-name label, with an index in [0, replicas) in its job-index label, and give the
// Job its name (jobsets.MadeByJobSet). Otherwise nothing is made and the Job is admitted as
// before: the reconciler, which reads the JobSet, judges it.
type JobWebhook struct {
	Gates  featuregate.FeatureGate
	Claims client.Reader
	// JobSets reads a Job's JobSet (the manager's cache, which watches JobSets); nil: no claim
	// is made.
	JobSets client.Reader
	// Client makes the claims the cache does not hold, and reads a JobSet the cache does not
	// show yet; nil: none is made.
	Client client.Client
}

var _ admission.Handler = (*JobWebhook)(nil)

// Handle implements admission.Handler.
func (w *JobWebhook) Handle(ctx context.Context, req admission.Request) admission.Response {
	job := &batchv1.Job{}
	if resp, done := addon.DecodeCreate(req, job); done {
		return resp
	}
	if !claims.HasTemplates(job) {
		return admission.Allowed("")
	}
	if !w.Gates.Enabled(claims.Gate) {
		return admission.Allowed("").WithWarnings(fmt.Sprintf("resourceclaims: the feature gate %s is off: no claims are added", claims.Gate))
	}
	bindings, errs := claims.Bindings(job)
	if len(errs) > 0 {
		logf.FromContext(ctx).Info("Denied a Job whose resource claim templates are invalid", "job", klog.KRef(req.Namespace, job.Name), "err", errs.ToAggregate())
		return admission.Denied("resourceclaims: the Job's resource claim templates are invalid, so its pods cannot get their claims: " + errs.ToAggregate().Error())
	}
	errs, unmade := w.taken(ctx, job, bindings, ptr.Deref(req.DryRun, false))
	if len(errs) > 0 {
		logf.FromContext(ctx).V(2).Info("Denied a Job whose resource claim is another Job's", "job", klog.KRef(req.Namespace, job.Name), "err", errs.ToAggregate())
		return addon.DenyTakenJob("resourceclaims", job, "that Job's devices", errs)
	}
	if unmade != "" {
		logf.FromContext(ctx).V(2).Info("Denied a Job whose resource claim cannot be made yet", "job", klog.KRef(req.Namespace, job.Name), "reason", unmade)
		return admission.Denied(fmt.Sprintf("resourceclaims: Job %s is not created while %s (JobSet retries it)", job.Name, unmade))
	}
	var warnings []string
	for _, b := range bindings {
		if b.Shadowed {
			warnings = append(warnings, fmt.Sprintf("resourceclaims: the pod template has its own resourceClaims entry %q, which wins: template %q gives this Job no claim", b.Template.Name, b.Template.Name))
		}
	}
	spec := &job.Spec.Template.Spec
	in := claims.Inject(spec, bindings)
	if !in.Any() {
		return admission.Allowed("").WithWarnings(warnings...)
	}
	var ops []jsonpatch.JsonPatchOperation
	// "add" of an object member that exists replaces it, so each op sets the whole list or
	// the whole resources of a container, whether the request carried it or not.
	if in.PodClaims {
		ops = append(ops, jsonpatch.NewOperation("add", "/spec/template/spec/resourceClaims", spec.ResourceClaims))
	}
	for _, i := range in.InitContainers {
		ops = append(ops, jsonpatch.NewOperation("add", fmt.Sprintf("/spec/template/spec/initContainers/%d/resources", i), spec.InitContainers[i].Resources))
	}
	for _, i := range in.Containers {
		ops = append(ops, jsonpatch.NewOperation("add", fmt.Sprintf("/spec/template/spec/containers/%d/resources", i), spec.Containers[i].Resources))
	}
	return admission.Patched("", ops...).WithWarnings(warnings...)
}

// taken lists the bindings whose claim exists and was made for another Job, at the path of
// the template that gives it. A claim the cache does not hold is made (make); unmade says why
// one could not be.
func (w *JobWebhook) taken(ctx context.Context, job *batchv1.Job, bindings []claims.Binding, dryRun bool) (errs field.ErrorList, unmade string) {
	if w.Claims == nil {
		return nil, ""
	}
	for i, b := range bindings {
		if b.Shadowed {
			continue
		}
		key := client.ObjectKey{Namespace: job.Namespace, Name: b.ClaimName}
		id := claims.Identity(claims.JobClaim(job, b))
		holder := addon.ForeignHolder(ctx, w.Claims, key, &resourcev1.ResourceClaim{}, id)
		if holder == "" && !dryRun && unmade == "" {
			holder, unmade = w.make(ctx, job, b, key, id)
		}
		if holder != "" {
			errs = append(errs, field.Forbidden(claims.JobAnnotationPath.Index(i).Child("metadata", "name"), addon.Taken("the ResourceClaim "+b.ClaimName, holder)))
		}
	}
	return errs, unmade
}

// make makes b's claim ahead of the Job, for its JobSet, when the cache does not hold it
// (addon.MakeFirst): holder names the other JobSet's claim of the name; unmade says why it
// could not be made. Nothing is made for a Job its JobSet does not make (jobSet).
func (w *JobWebhook) make(ctx context.Context, job *batchv1.Job, b claims.Binding, key client.ObjectKey, id contract.Identity) (holder, unmade string) {
	if w.Client == nil || w.JobSets == nil {
		return "", ""
	}
	if err := w.Claims.Get(ctx, key, &resourcev1.ResourceClaim{}); !apierrors.IsNotFound(err) {
		return "", "" // in the cache (and not another's), or the cache cannot say
	}
	js := w.jobSet(ctx, job)
	if js == nil {
		return "", ""
	}
	index, _ := strconv.Atoi(job.Labels[contract.JobIndexLabelKey]) // in [0, replicas): jobSet
	want := claims.Claim(job.Namespace, js.Name, job.Labels[contract.ReplicatedJobNameLabelKey], index, claims.JobSetOwner(js), b)
	holder, made, err := addon.MakeFirst(ctx, w.Client, want, id)
	switch {
	case made:
		logf.FromContext(ctx).V(2).Info("Made the Job's claim ahead of it", "claim", klog.KObj(want))
		addon.CountObject("ResourceClaim", addon.ActionCreated, 1)
	case err != nil && !addon.NamespaceTerminating(err):
		return "", fmt.Sprintf("its ResourceClaim %s (template %s) does not exist yet and cannot be made: %v", b.ClaimName, b.Template.Name, err)
	}
	return holder, ""
}

// jobSet is the JobSet that controls job, from the cache or, when the cache does not show it
// or shows another of its name (an earlier JobSet), from the API server; nil unless that
// JobSet makes the Job: the name of the Job's jobset-name label and the UID of its controller
// reference, one of its ReplicatedJobs and an index below its replicas in the Job's labels,
// and the name the JobSet gives that Job (jobsets.MadeByJobSet). A JobSet the cache trims (one
// without templates, or managed elsewhere) has no ReplicatedJob there, so it makes no Job here.
func (w *JobWebhook) jobSet(ctx context.Context, job *batchv1.Job) *jobsetv1alpha2.JobSet {
	if js := addon.ControllingJobSet(ctx, w.JobSets, w.Client, job); js != nil && jobsets.MadeByJobSet(js, job) && job.Labels[contract.JobSetNameLabelKey] == js.Name {
		return js
	}
	return nil
}
