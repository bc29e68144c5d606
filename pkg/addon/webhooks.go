package addon

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// Paths at which every add-on serves its JobSet webhooks: the chart's webhook configurations
// (templates/_webhooks.tpl) name them.
const (
	// MutateJobSetPath is an add-on's JobSet mutating webhook (CREATE).
	MutateJobSetPath = "/mutate-jobset-x-k8s-io-v1alpha2-jobset"
	// ValidateJobSetPath is an add-on's JobSet validating webhook (CREATE and UPDATE).
	ValidateJobSetPath = "/validate-jobset-x-k8s-io-v1alpha2-jobset"
)

// RegisterJobSetWebhooks serves, on mgr's webhook server, hook as the mutating webhook at
// MutateJobSetPath and as the validating webhook at ValidateJobSetPath. obj is an empty
// JobSet; the manager's scheme must know its type.
//
// The mutating webhook leaves alone a JobSet managed elsewhere (contract.ManagedElsewhere, in
// MultiKueue's manager cluster): MultiKueue copies its labels, annotations and spec as they are
// to the worker cluster, with spec.managedBy cleared, and the worker's webhooks give that copy
// what a JobSet created there gets, from the worker's own settings. The validating webhook
// validates it as ever, so that a bad annotation is refused where the user wrote it.
func RegisterJobSetWebhooks[T runtime.Object](mgr ctrl.Manager, obj T, hook interface {
	admission.Defaulter[T]
	admission.Validator[T]
}) error {
	refusals.WithLabelValues("jobset", "FieldValueInvalid") // the series from the start
	err := ctrl.NewWebhookManagedBy(mgr, obj).
		WithDefaulter(hereOnly[T]{hook}).
		WithDefaulterCustomPath(MutateJobSetPath).
		WithValidator(countedValidator[T]{hook}).
		WithValidatorCustomPath(ValidateJobSetPath).
		Complete()
	if err != nil {
		return fmt.Errorf("registering the JobSet webhooks: %w", err)
	}
	return nil
}

// hereOnly defaults only the JobSets of this cluster: it leaves a JobSet managed elsewhere as
// it is.
type hereOnly[T runtime.Object] struct{ admission.Defaulter[T] }

func (d hereOnly[T]) Default(ctx context.Context, obj T) error {
	if js, ok := any(obj).(*jobsetv1alpha2.JobSet); ok && contract.ManagedElsewhere(js.Spec.ManagedBy) {
		return nil
	}
	return d.Defaulter.Default(ctx, obj)
}

// countedValidator counts the JobSets hook refuses (jobset_addons_webhook_refusals_total,
// webhook "jobset").
type countedValidator[T runtime.Object] struct{ admission.Validator[T] }

func (v countedValidator[T]) ValidateCreate(ctx context.Context, obj T) (admission.Warnings, error) {
	w, err := v.Validator.ValidateCreate(ctx, obj)
	if err != nil {
		countRefusal("jobset", err)
	}
	return w, err
}

func (v countedValidator[T]) ValidateUpdate(ctx context.Context, oldObj, newObj T) (admission.Warnings, error) {
	w, err := v.Validator.ValidateUpdate(ctx, oldObj, newObj)
	if err != nil {
		countRefusal("jobset", err)
	}
	return w, err
}
