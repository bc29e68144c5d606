// Package webhook holds the podgroups JobSet admission webhooks: on CREATE a mutating webhook
// that names each pod template's gang (Volcano's group-name annotation and queue, the
// coscheduling pod-group label, or spec.schedulingGroup.podGroupName for kube-scheduler) and
// sets a second scheduler's schedulerName where it is empty, and a validating
// webhook that refuses bad settings with field paths; on UPDATE the same validating webhook
// keeps the podgroups annotations immutable, and the mutating one puts back a
// spec.schedulingGroup an update dropped (the kubernetes backend beside Kueue). What they read
// comes from package podgroups (pkg/addon/checks/podgroups), what they inject and refuse per
// scheduler from package backend.
package webhook

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/controllers/podgroups/internal/backend"
	"github.com/jobset-addons/jobset-addons/pkg/addon"
	"github.com/jobset-addons/jobset-addons/pkg/addon/checks/podgroups"
	"github.com/jobset-addons/jobset-addons/pkg/addon/jobsets"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// JobSetWebhook names the gangs in, and validates, JobSets that ask for gang scheduling.
type JobSetWebhook struct {
	// Backends are every backend, installed or not, each by its scheduler.
	Backends *backend.Registry
	// Installed tells whether a backend's PodGroup CRD was served when the controller started.
	Installed func(contract.Scheduler) bool
	// Classes reads PriorityClass values, for the warning when a gang's templates differ.
	Classes podgroups.PriorityClassReader
	// Claims tells whether the apiserver keeps a PodGroup's claims (DRAWorkloadResourceClaims),
	// for a Job of more than jobsets.MaxClaimSharers pods whose claims go on its PodGroup. nil:
	// such a Job is refused.
	Claims *ClaimsProbe
	// CompositeKind is the kind of CompositePodGroup (scheduling.k8s.io/v1beta1, else v1alpha3)
	// served when the controller started; zero: none, and a composite gang is refused.
	CompositeKind schema.GroupVersionKind
	// DryRun, when set, has the API server judge the gang objects a new JobSet would get (its
	// Workload, or its PodGroups): their validation (the CRD's schema), admission policies,
	// other webhooks, the namespace's quota (addon.DryRunner).
	DryRun *addon.DryRunner
	// DefaultQueue is the Volcano queue of a JobSet that names none, as the reconciler's.
	DefaultQueue string
	// Reader, when set, is the controller's cache of the gang objects podgroups made: a gang
	// object the dry run does not make (the PodGroups and CompositePodGroups of a backend that
	// makes a Workload) whose name another JobSet's gang holds refuses the JobSet.
	Reader client.Reader
}

var (
	_ admission.Defaulter[*jobsetv1alpha2.JobSet] = (*JobSetWebhook)(nil)
	_ admission.Validator[*jobsetv1alpha2.JobSet] = (*JobSetWebhook)(nil)
)

// Register serves the two JobSet webhooks and the Job webhook on mgr's webhook server.
func Register(mgr ctrl.Manager, w *JobSetWebhook) error {
	if err := addon.RegisterJobSetWebhooks(mgr, &jobsetv1alpha2.JobSet{}, w); err != nil {
		return err
	}
	jobs := &JobWebhook{Reader: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Backends: w.Backends, Installed: w.Installed, CompositeKind: w.CompositeKind,
		Classes: w.Classes, DefaultQueue: w.DefaultQueue}
	if w.DryRun != nil {
		jobs.Client = w.DryRun.Client // its own rate limit: admission never waits behind the reconciler
	}
	mgr.GetWebhookServer().Register(MutateJobPath, &admission.Webhook{Handler: addon.CountRefusals("job", jobs)})
	return nil
}

// Default names the gangs on CREATE. It leaves alone a JobSet whose settings or stages do not
// parse (validation refuses it). It refuses a JobSet whose pod templates already name a gang
// podgroups would not name (podgroups.ForeignGangs: Kubeflow Trainer's podGroupPolicy beside
// podgroups' annotations), before it names anything: the validating webhook sees the names
// podgroups injected and cannot tell. On UPDATE it only puts back the kubernetes backend's
// spec.schedulingGroup where the update dropped it (backend.Restorer: Kueue v0.17.0
// does, when it admits or evicts the JobSet); any other operation is left alone.
func (w *JobSetWebhook) Default(ctx context.Context, js *jobsetv1alpha2.JobSet) error {
	if req, err := admission.RequestFromContext(ctx); err == nil && req.Operation != admissionv1.Create {
		if req.Operation == admissionv1.Update {
			return w.restore(ctx, req, js)
		}
		return nil
	}
	if !podgroups.Uses(js) {
		return nil
	}
	s, gangs, errs := podgroups.Read(js)
	b := w.Backends.For(s.Scheduler)
	if b == nil || len(errs.All()) > 0 || len(b.Validate(js, s, gangs)) > 0 {
		return nil
	}
	if errs := podgroups.ForeignGangs(js, s, gangs); len(errs) > 0 {
		return jobsets.Invalid(js, errs)
	}
	backend.Inject(b, js, s, gangs)
	return nil
}

// restore puts back, on UPDATE, what the JobSet's backend keeps in the pod templates and the
// update dropped (backend.Restorer).
func (w *JobSetWebhook) restore(ctx context.Context, req admission.Request, js *jobsetv1alpha2.JobSet) error {
	r, ok := w.Backends.For(contract.Scheduler(js.Annotations[contract.SchedulerAnnotationKey])).(backend.Restorer)
	if !ok {
		return nil
	}
	old := &jobsetv1alpha2.JobSet{}
	if err := json.Unmarshal(req.OldObject.Raw, old); err != nil {
		return fmt.Errorf("decoding the JobSet before the update: %w", err)
	}
	if restored := r.Restore(old, js); len(restored) > 0 {
		ctrl.LoggerFrom(ctx).V(1).Info("Put back spec.schedulingGroup that an update dropped", "jobset", js.Namespace+"/"+js.Name,
			"replicatedJobs", restored, "user", req.UserInfo.Username)
	}
	return nil
}

// ValidateCreate refuses a JobSet whose gang settings are not valid, every problem a field
// error in one response, and warns when a gang's pod templates have different priority classes.
func (w *JobSetWebhook) ValidateCreate(ctx context.Context, js *jobsetv1alpha2.JobSet) (admission.Warnings, error) {
	warnings, errs := w.Validate(ctx, js)
	return warnings, jobsets.Invalid(js, errs)
}

// ValidateUpdate keeps the podgroups annotations as they were created.
func (w *JobSetWebhook) ValidateUpdate(_ context.Context, oldJS, newJS *jobsetv1alpha2.JobSet) (admission.Warnings, error) {
	return nil, jobsets.Invalid(newJS, jobsets.ImmutableAnnotations(oldJS, newJS, podgroups.ImmutableKeys...))
}

// ValidateDelete allows every deletion.
func (w *JobSetWebhook) ValidateDelete(context.Context, *jobsetv1alpha2.JobSet) (admission.Warnings, error) {
	return nil, nil
}

// Validate is every problem of a new JobSet's gang settings: the annotations (podgroups.Parse), a
// backend whose CRD is not installed, stages that cannot be computed, gang names that are too
// long, pod templates naming another scheduler, and a Job of more than jobsets.MaxClaimSharers
// pods sharing its claims through a PodGroup where the apiserver drops a PodGroup's claims;
// and the priority warnings; then what the API server refuses of its gang objects, by dry run
// (DryRun), or warns of. Of a JobSet managed elsewhere (contract.ManagedElsewhere), only
// what it says itself: the annotations, the gangs and the backend's own limits.
func (w *JobSetWebhook) Validate(ctx context.Context, js *jobsetv1alpha2.JobSet) (admission.Warnings, field.ErrorList) {
	if !podgroups.Uses(js) {
		return nil, nil
	}
	s, gangs, read := podgroups.Read(js)
	b := w.Backends.For(s.Scheduler)
	if b == nil {
		return nil, read.Settings
	}
	// Of a JobSet not this cluster's to run (MultiKueue's manager), what depends on this
	// cluster's own set-up (the CRDs and gates served, the schedulers' names, the priority
	// classes) is the worker's webhook's to check, on the copy it is given.
	here := !contract.ManagedElsewhere(js.Spec.ManagedBy)
	errs := read.Settings
	installed := w.Installed == nil || w.Installed(s.Scheduler)
	if here && !installed {
		errs = append(errs, field.Invalid(contract.JobSetAnnotationPath(contract.SchedulerAnnotationKey), string(s.Scheduler), b.NotServed()))
	}
	if here && s.Composite && w.CompositeKind.Empty() {
		errs = append(errs, field.Invalid(contract.JobSetAnnotationPath(contract.CompositeAnnotationKey), contract.EnabledValue,
			"this cluster's apiserver did not serve CompositePodGroup when the podgroups controller started: a composite gang needs the feature gate CompositePodGroup "+
				"on kube-apiserver, kube-scheduler and kube-controller-manager and, on kube-apiserver, --runtime-config=scheduling.k8s.io/v1beta1=true (Kubernetes 1.38) "+
				"or scheduling.k8s.io/v1alpha3=true (1.37); turn them on and restart the controller, or leave the annotation out"))
	}
	if here {
		errs = append(errs, backend.SchedulerNameErrors(b, js)...)
	}
	if errs = append(errs, read.Gangs...); len(read.Gangs) == 0 {
		if invalid := b.Validate(js, s, gangs); len(invalid) > 0 {
			errs, gangs = append(errs, invalid...), nil // no gangs to look further into
		}
	}
	if !here {
		return nil, errs
	}
	if installed {
		errs = append(errs, w.claimErrors(ctx, js, gangs)...)
	}
	var warnings admission.Warnings
	if installed && len(errs) == 0 {
		var refused field.ErrorList
		refused, warnings = w.DryRun.Check(ctx, w.dryRuns(js, b, s, gangs))
		errs = append(errs, refused...)
		errs = append(errs, w.takenBeyondDryRun(ctx, js, b, gangs)...)
		errs = append(errs, w.takenByJobSets(ctx, js, b, gangs)...)
	}
	if wb, ok := b.(backend.Warner); ok {
		warnings = append(warnings, wb.Warnings(js, gangs)...)
	}
	for _, g := range gangs {
		if _, warning := g.PriorityClass(w.Classes); warning != "" {
			warnings = append(warnings, warning)
		}
	}
	return warnings, errs
}

// claimErrors refuses each gang that is one Job of more than jobsets.MaxClaimSharers pods whose
// claims go on its PodGroup (jobsets.ClaimsOnPodGroup), where the apiserver drops a PodGroup's
// claims: each claim would be reserved per pod, and no claim serves more than 256 pods.
func (w *JobSetWebhook) claimErrors(ctx context.Context, js *jobsetv1alpha2.JobSet, gangs []podgroups.Gang) field.ErrorList {
	var errs field.ErrorList
	var units []podgroups.Gang
	for _, g := range gangs {
		units = append(append(units, g), g.Children()...)
	}
	for _, g := range units {
		if len(g.Claims) == 0 {
			continue
		}
		i := slices.IndexFunc(js.Spec.ReplicatedJobs, func(rj jobsetv1alpha2.ReplicatedJob) bool { return rj.Name == g.ClaimsOf })
		pods := jobsets.PodsPerJob(&js.Spec.ReplicatedJobs[i])
		if pods <= jobsets.MaxClaimSharers {
			continue
		}
		kept, why := false, "no probe is configured"
		if w.Claims != nil {
			kept, why = w.Claims.Kept(ctx, js.Namespace)
		}
		if kept {
			continue
		}
		errs = append(errs, field.Forbidden(contract.ReplicatedJobAnnotationPath(i, contract.TemplatesAnnotationKey), fmt.Sprintf(
			"a Job of ReplicatedJob %q runs %d pods at once and shares these claims: a claim reserved for each pod serves at most %d (a ResourceClaim's status.reservedFor), "+
				"so they must be reserved for the Job's PodGroup %s, and this cluster's apiserver %s: it needs the feature gate DRAWorkloadResourceClaims "+
				"on kube-apiserver, kube-scheduler and kube-controller-manager; or run at most %d pods of a Job at once",
			g.ClaimsOf, pods, jobsets.MaxClaimSharers, g.Name, why, jobsets.MaxClaimSharers)))
	}
	return errs
}

// String is for logs.
func (w *JobSetWebhook) String() string {
	return fmt.Sprintf("podgroups JobSet webhook (volcano=%q, coscheduling=%q, kai=%q)", w.schedulerName(contract.SchedulerVolcano), w.schedulerName(contract.SchedulerCoscheduling), w.schedulerName(contract.SchedulerKAI))
}

func (w *JobSetWebhook) schedulerName(s contract.Scheduler) string {
	if b := w.Backends.For(s); b != nil {
		return b.SchedulerName()
	}
	return ""
}

// takenBeyondDryRun refuses, at the scheduler annotation, each gang object of a backend that
// makes a Workload (whose PodGroups and CompositePodGroups the dry run does not make: they are
// made from its templates) that exists in the cache and is another JobSet's
// (backend.Identity): names are joined with "-", so JobSet a-stage-1's PodGroup and stage 1's
// of JobSet a coincide.
func (w *JobSetWebhook) takenBeyondDryRun(ctx context.Context, js *jobsetv1alpha2.JobSet, b backend.Backend, gangs []podgroups.Gang) field.ErrorList {
	wb, ok := b.(backend.Workloads)
	if !ok || w.Reader == nil || js.Name == "" {
		return nil
	}
	path := contract.JobSetAnnotationPath(contract.SchedulerAnnotationKey)
	var errs field.ErrorList
	for _, o := range backend.Objects(b, js, gangs, w.CompositeKind) {
		if o.Kind == wb.WorkloadKind() {
			continue
		}
		key := client.ObjectKey{Namespace: js.Namespace, Name: o.Name}
		if holder := addon.ForeignHolder(ctx, w.Reader, key, backend.Meta(o.Kind), o.Identity); holder != "" {
			errs = append(errs, field.Invalid(path, field.OmitValueType{}, addon.Taken(o.What, holder)))
		}
	}
	return errs
}

// takenByJobSets refuses, at the scheduler annotation, each gang object whose name a gang of
// another JobSet of the namespace takes, one that has not finished (backend.GangIndex), though
// it is not made yet: a stage the sequencer gates has its gang made only once released, and its
// Jobs and pods exist before it, so that a JobSet admitted meanwhile would make the gang first
// and those pods, released, would join it. Of two JobSets created at the same moment, both may
// pass (the cache shows neither yet): the first create of the object decides, and the other is
// held and told (PodGroupNameTaken). An object that exists is left to the checks of objects.
func (w *JobSetWebhook) takenByJobSets(ctx context.Context, js *jobsetv1alpha2.JobSet, b backend.Backend, gangs []podgroups.Gang) field.ErrorList {
	if w.Reader == nil || js.Name == "" {
		return nil
	}
	path := contract.JobSetAnnotationPath(contract.SchedulerAnnotationKey)
	var errs field.ErrorList
	for _, o := range backend.Objects(b, js, gangs, w.CompositeKind) {
		key := client.ObjectKey{Namespace: js.Namespace, Name: o.Name}
		if err := w.Reader.Get(ctx, key, backend.Meta(o.Kind)); !apierrors.IsNotFound(err) {
			continue // made (whose it is, the dry run or takenBeyondDryRun tells), or the cache cannot say
		}
		var list jobsetv1alpha2.JobSetList
		if err := w.Reader.List(ctx, &list, client.InNamespace(js.Namespace), client.MatchingFields{backend.GangIndex: backend.GangKey(o.Kind, o.Name)}); err != nil {
			continue // no index (a cache that cannot say): the objects' own checks remain
		}
		for i := range list.Items {
			other := &list.Items[i]
			if other.Name == js.Name || jobsets.Finished(other) || !other.DeletionTimestamp.IsZero() {
				continue
			}
			errs = append(errs, field.Invalid(path, field.OmitValueType{}, fmt.Sprintf(
				"%s would also be a gang of JobSet %s, which has not finished (names are joined with \"-\"): rename this JobSet, or create it once JobSet %s has finished",
				o.What, other.Name, other.Name)))
			break
		}
	}
	return errs
}
