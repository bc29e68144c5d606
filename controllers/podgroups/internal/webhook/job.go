package webhook

import (
	"context"
	"fmt"

	"gomodules.xyz/jsonpatch/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/controllers/podgroups/internal/backend"
	"github.com/jobset-addons/jobset-addons/pkg/addon"
	"github.com/jobset-addons/jobset-addons/pkg/addon/checks/podgroups"
	"github.com/jobset-addons/jobset-addons/pkg/addon/jobsets"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// MutateJobPath is the Job mutating webhook (CREATE, and the UPDATE that resumes a suspended
// Job), scoped to JobSet Jobs that carry contract.GangAnnotationKey or
// contract.PerJobPodGroupAnnotationKey.
const MutateJobPath = "/mutate-batch-v1-job"

// gangPath is where a Job names its gang (contract.GangAnnotationKey): a refusal's field.
var gangPath = field.NewPath("metadata", "annotations").Key(contract.GangAnnotationKey)

// JobWebhook holds, on CREATE and on the UPDATE that resumes it, a Job of a JobSet whose gang
// object (its Workload, its gang's PodGroup or CompositePodGroup, its own PodGroup) exists and
// is another JobSet's (backend.Identity: names are joined with "-", so two JobSets created at
// once can give the same one, and only one is refused at admission): its pods would be
// scheduled as members of that JobSet's gang. JobSet creates or resumes it again with back-off;
// the reconciler tells the JobSet (PodGroupNameTaken) and makes the gang once the other is gone.
//
// A gang object the cache does not show, of a gang the reconciler would make now (the JobSet's
// one gang, a stage that may run), may be made any moment by another JobSet of a colliding name,
// and the Job's pods would then join that JobSet's gang: so the webhook makes it itself, as the
// reconciler makes it (its Workload first, then its CompositePodGroup, then its PodGroup), and
// the first create wins (addon.MakeFirst). A create that collides with another JobSet's object
// holds the Job as above; one that fails otherwise (a quota) holds it, naming the object, until
// it can be made. A dry run makes nothing (the chart declares sideEffects NoneOnDryRun). A stage
// the sequencer gates gets its gang only once released, from the reconciler, as before.
//
// On CREATE it then names a composite gang's Job's own PodGroup (contract.JobPodGroupName, the
// Job's name) in its pod template's spec.schedulingGroup.podGroupName, where the JobSet webhook
// put the gang's name: the pod template of a ReplicatedJob is one for all its Jobs, and only the
// Job knows which it is.
//
// It reads the Job, its JobSet and the gang objects from the controller's cache (APIReader only
// for a JobSet the cache does not show yet).
type JobWebhook struct {
	// Reader is the controller's cache: JobSets, and the metadata of the gang objects podgroups
	// made. nil: no Job is held.
	Reader client.Reader
	// APIReader reads a JobSet the cache does not show yet.
	APIReader client.Reader
	// Backends are every backend; Installed tells whether a backend's kinds were served at start.
	Backends  *backend.Registry
	Installed func(contract.Scheduler) bool
	// CompositeKind is the kind of CompositePodGroup served at start; zero: none.
	CompositeKind schema.GroupVersionKind
	// Client makes the gang objects the cache does not show (an API client, not the cache:
	// it reads back one of the name that is not ours); nil: none is made.
	Client client.Client
	// Classes reads PriorityClass values, DefaultQueue is Volcano's default queue: the gang
	// objects are built as the reconciler builds them.
	Classes      podgroups.PriorityClassReader
	DefaultQueue string
}

var _ admission.Handler = &JobWebhook{}

// Handle implements admission.Handler.
func (w *JobWebhook) Handle(ctx context.Context, req admission.Request) admission.Response {
	job := &batchv1.Job{}
	resp, resumed, done := addon.DecodeCreateOrResume(req, job)
	if done {
		return resp
	}
	errs, unmade := w.taken(ctx, job, ptr.Deref(req.DryRun, false))
	if len(errs) > 0 {
		logf.FromContext(ctx).V(2).Info("Held a Job whose gang object is another JobSet's", "job", klog.KRef(job.Namespace, job.Name), "resumed", resumed, "err", errs.ToAggregate())
		return addon.DenyTakenJob("podgroups", job, "another JobSet's gang", errs)
	}
	if unmade != "" {
		logf.FromContext(ctx).V(2).Info("Held a Job whose gang object cannot be made yet", "job", klog.KRef(job.Namespace, job.Name), "reason", unmade)
		return admission.Denied(fmt.Sprintf("podgroups: Job %s is not created or resumed while %s (JobSet retries it)", job.Name, unmade))
	}
	if resumed || job.Annotations[contract.PerJobPodGroupAnnotationKey] != contract.EnabledValue {
		return admission.Allowed("")
	}
	name, err := contract.JobPodGroupName(job.Name)
	if err != nil {
		return admission.Denied("podgroups: " + err.Error())
	}
	sg := corev1.PodSchedulingGroup{PodGroupName: ptr.To(name)}
	return admission.Patched("", jsonpatch.NewOperation("add", "/spec/template/spec/schedulingGroup", sg))
}

// taken lists the Job's gang objects that exist and are another JobSet's
// (backend.JobObjects), each at the Job's gang annotation. None for a Job whose JobSet is gone,
// is not the one that controls it, or asks for no gang that is made here. A gang object the
// cache does not show, of a gang made now (made), is made first (make); unmade says why one
// could not be.
func (w *JobWebhook) taken(ctx context.Context, job *batchv1.Job, dryRun bool) (errs field.ErrorList, unmade string) {
	if w.Reader == nil {
		return nil, ""
	}
	js := w.jobSet(ctx, job)
	if js == nil || !podgroups.Uses(js) {
		return nil, ""
	}
	s, gangs, read := podgroups.Read(js)
	b := w.Backends.For(s.Scheduler)
	if b == nil || len(read.All()) > 0 || (w.Installed != nil && !w.Installed(s.Scheduler)) || (s.Composite && w.CompositeKind.Empty()) {
		return nil, ""
	}
	rj := job.Labels[contract.ReplicatedJobNameLabelKey]
	makes := !dryRun && w.Client != nil && made(js, gangs, rj, job) && len(b.Validate(js, s, gangs)) == 0
	for _, o := range backend.JobObjects(b, js, gangs, rj, job.Name, w.CompositeKind) {
		key := client.ObjectKey{Namespace: job.Namespace, Name: o.Name}
		holder := addon.ForeignHolder(ctx, w.Reader, key, backend.Meta(o.Kind), o.Identity)
		if holder == "" && makes && unmade == "" {
			var theirs bool
			holder, unmade, theirs = w.make(ctx, js, s, gangs, b, o)
			// A user's object of the name (a Workload, say): nothing below it is made, as the
			// reconciler makes nothing below a parent that is not ours.
			makes = !theirs
		}
		if holder != "" {
			errs = append(errs, field.Forbidden(gangPath, addon.Taken(o.What, holder)))
		}
	}
	return errs, unmade
}

// made tells whether the gang of the Job's ReplicatedJob rj is made as the Job is created, as
// the reconciler would make it: the JobSet's one gang, or a stage that may run
// (podgroups.MayRun: a stage the sequencer gates is made only once it released it, so that
// its PodGroup holds no queue before); none once the JobSet finished, nor for a Job the JobSet
// does not make (jobsets.MadeByJobSet: its labels are not the JobSet's word).
func made(js *jobsetv1alpha2.JobSet, gangs []podgroups.Gang, rj string, job *batchv1.Job) bool {
	g, ok := backend.GangOf(gangs, rj)
	switch {
	case !ok || jobsets.Finished(js) || !jobsets.MadeByJobSet(js, job):
		return false
	case len(gangs) == 1:
		return true
	}
	return podgroups.MayRun(js, g.Stage, jobsets.AttemptOf(job.Labels), true)
}

// make creates gang object o of the JobSet, as the reconciler makes it, when the cache does
// not show it (addon.MakeFirst): holder names the other JobSet that holds its name; unmade says
// why it could not be made (a quota: the Job is held until it can); theirs says one of the
// name exists that is neither ours nor another JobSet's (a user's).
func (w *JobWebhook) make(ctx context.Context, js *jobsetv1alpha2.JobSet, s podgroups.Settings, gangs []podgroups.Gang, b backend.Backend, o backend.Named) (holder, unmade string, theirs bool) {
	key := client.ObjectKey{Namespace: js.Namespace, Name: o.Name}
	have := backend.Meta(o.Kind)
	switch err := w.Reader.Get(ctx, key, have); {
	case err == nil:
		return "", "", !backend.Ours(have, js) // in the cache, and not another JobSet's
	case !apierrors.IsNotFound(err):
		return "", "", false // the cache cannot say
	}
	class := func(g podgroups.Gang) string {
		pc, _ := g.PriorityClass(w.Classes)
		return pc
	}
	want, err := o.Build(b, js, s, gangs, class, w.DefaultQueue)
	if err != nil {
		return "", fmt.Sprintf("%s cannot be built: %v", o.What, err), false
	}
	holder, made, err := addon.MakeFirst(ctx, w.Client, want, o.Identity)
	switch {
	case made:
		logf.FromContext(ctx).V(2).Info("Made the Job's gang object ahead of it", "object", klog.KObj(want), "kind", o.Kind.Kind)
	case err != nil && !addon.NamespaceTerminating(err):
		return "", fmt.Sprintf("%s does not exist yet and cannot be made: %v", o.What, err), false
	}
	theirs = !made && err == nil && holder == ""
	if theirs { // or ours, made a moment ago and not in the cache yet
		have = backend.Meta(o.Kind)
		theirs = w.Client.Get(ctx, key, have) != nil || !backend.Ours(have, js)
	}
	return holder, "", theirs
}

// jobSet is the JobSet that controls job (addon.ControllingJobSet), nil when there is none.
func (w *JobWebhook) jobSet(ctx context.Context, job *batchv1.Job) *jobsetv1alpha2.JobSet {
	return addon.ControllingJobSet(ctx, w.Reader, w.APIReader, job)
}
