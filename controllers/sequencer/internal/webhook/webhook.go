// Package webhook holds the sequencer's JobSet admission webhooks: on CREATE a mutating webhook
// that gates the pod templates of every ReplicatedJob that waits, and a validating webhook that
// refuses bad sequencing with field paths; on UPDATE the same validating webhook keeps the
// sequencer annotations immutable. What they read and inject comes from package sequencer
// (pkg/addon/checks/sequencer).
package webhook

import (
	"context"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/pkg/addon"
	"github.com/jobset-addons/jobset-addons/pkg/addon/checks/sequencer"
	"github.com/jobset-addons/jobset-addons/pkg/addon/jobsets"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// Register serves the two webhooks on mgr's webhook server (at addon.MutateJobSetPath and
// addon.ValidateJobSetPath). The manager's scheme must know the JobSet types. The dry runs of
// barrier pods go through a client of their own, with a rate limit of their own (qps, burst),
// so that admission never waits behind the reconciler's API calls.
func Register(mgr ctrl.Manager, barrier sequencer.BarrierSettings, qps float32, burst int) error {
	c, err := addon.NewDryRunClient(mgr, qps, burst)
	if err != nil {
		return err
	}
	hook := &JobSetWebhook{Barrier: barrier, DryRun: &addon.DryRunner{Client: c, Name: "sequencer", Remember: DryRunRemember}}
	return addon.RegisterJobSetWebhooks(mgr, &jobsetv1alpha2.JobSet{}, hook)
}

// JobSetWebhook gates and validates JobSets that use the sequencer annotations. Its only API
// calls are the dry runs of DryRun, for JobSets with a start barrier.
type JobSetWebhook struct {
	// Barrier is the start barrier's init container: its image and resources.
	Barrier sequencer.BarrierSettings
	// DryRun, when set, has the API server judge a pod of each pod template that gets the
	// start barrier's init container (sequencer.BarrierDryRuns).
	DryRun *addon.DryRunner
}

var (
	_ admission.Defaulter[*jobsetv1alpha2.JobSet] = (*JobSetWebhook)(nil)
	_ admission.Validator[*jobsetv1alpha2.JobSet] = (*JobSetWebhook)(nil)
)

// Default gates and gives the start barrier to a new JobSet (sequencer.Default, with the
// controller's barrier settings); any operation but CREATE is left alone (pod templates are
// immutable upstream).
func (w *JobSetWebhook) Default(ctx context.Context, js *jobsetv1alpha2.JobSet) error {
	if req, err := admission.RequestFromContext(ctx); err == nil && req.Operation != admissionv1.Create {
		return nil
	}
	sequencer.Default(js, w.Barrier)
	return nil
}

// ValidateCreate refuses a JobSet whose sequencing is not valid, every problem a field error
// in one response (sequencer.Parsed.Validate), and a JobSet with a start barrier whose pods the
// API server refuses for good (sequencer.BarrierDryRuns); it warns of barrier pods refused for a
// reason that may change (quota, LimitRange, Pod Security), and with sequencer.Parsed.Warnings
// (Kueue's waitForPodsReady, a JobSet barrier on a staged JobSet). The annotations are parsed
// once for all of these.
func (w *JobSetWebhook) ValidateCreate(ctx context.Context, js *jobsetv1alpha2.JobSet) (admission.Warnings, error) {
	p := sequencer.ParseJobSet(js)
	if errs := p.Validate(js); len(errs) > 0 {
		return nil, jobsets.Invalid(js, errs)
	}
	if !p.Uses {
		return nil, nil
	}
	refused, warnings := w.DryRun.Check(ctx, sequencer.BarrierDryRuns(js))
	if len(refused) > 0 {
		return warnings, jobsets.Invalid(js, refused)
	}
	return append(warnings, p.Warnings(js)...), nil
}

// ValidateUpdate keeps the sequencer annotations as they were created.
func (w *JobSetWebhook) ValidateUpdate(_ context.Context, oldJS, newJS *jobsetv1alpha2.JobSet) (admission.Warnings, error) {
	return nil, jobsets.Invalid(newJS, ValidateUpdate(oldJS, newJS))
}

// ValidateDelete allows every deletion.
func (w *JobSetWebhook) ValidateDelete(context.Context, *jobsetv1alpha2.JobSet) (admission.Warnings, error) {
	return nil, nil
}

// ValidateUpdate refuses any change to the execution-policy, wait-for, depends-on,
// start-barrier and start-barrier-timeout annotations, and to a pod template's barrier-state
// (podTemplateRecordsChanged).
func ValidateUpdate(oldJS, newJS *jobsetv1alpha2.JobSet) field.ErrorList {
	errs := jobsets.ImmutableAnnotations(oldJS, newJS, contract.ExecutionPolicyAnnotationKey, contract.WaitForAnnotationKey,
		contract.StartBarrierAnnotationKey, contract.StartBarrierTimeoutAnnotationKey)
	errs = append(errs, jobsets.ImmutableReplicatedJobAnnotations(oldJS, newJS, contract.DependsOnAnnotationKey)...)
	return append(errs, podTemplateRecordsChanged(oldJS, newJS)...)
}
