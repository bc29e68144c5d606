package webhook

import (
	"context"
	"fmt"

	"gomodules.xyz/jsonpatch/v2"
	batchv1 "k8s.io/api/batch/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/component-base/featuregate"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/jobset-addons/jobset-addons/controllers/resourceclaims/internal/claims"
	"github.com/jobset-addons/jobset-addons/pkg/addon"
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
// the reconciler makes it the Job's, or makes it again. So does a claim the cache does not
// hold (a user's, one not seen yet).
type JobWebhook struct {
	Gates  featuregate.FeatureGate
	Claims client.Reader
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
	if errs := w.taken(ctx, job, bindings); len(errs) > 0 {
		logf.FromContext(ctx).V(2).Info("Denied a Job whose resource claim is another Job's", "job", klog.KRef(req.Namespace, job.Name), "err", errs.ToAggregate())
		return addon.DenyTakenJob("resourceclaims", job, "that Job's devices", errs)
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

// taken lists the bindings whose claim exists in the cache and was made for another Job, at
// the path of the template that gives it; a claim the cache does not give is not taken.
func (w *JobWebhook) taken(ctx context.Context, job *batchv1.Job, bindings []claims.Binding) field.ErrorList {
	if w.Claims == nil {
		return nil
	}
	var errs field.ErrorList
	for i, b := range bindings {
		if b.Shadowed {
			continue
		}
		key := client.ObjectKey{Namespace: job.Namespace, Name: b.ClaimName}
		holder := addon.ForeignHolder(ctx, w.Claims, key, &resourcev1.ResourceClaim{}, claims.Identity(claims.JobClaim(job, b)))
		if holder == "" {
			continue
		}
		errs = append(errs, field.Forbidden(claims.JobAnnotationPath.Index(i).Child("metadata", "name"), addon.Taken("the ResourceClaim "+b.ClaimName, holder)))
	}
	return errs
}
