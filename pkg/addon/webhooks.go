package addon

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
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
// JobSet; the manager's scheme must know its type. (This package does not import the JobSet
// API: the type comes from the caller.)
func RegisterJobSetWebhooks[T runtime.Object](mgr ctrl.Manager, obj T, hook interface {
	admission.Defaulter[T]
	admission.Validator[T]
}) error {
	err := ctrl.NewWebhookManagedBy(mgr, obj).
		WithDefaulter(hook).
		WithDefaulterCustomPath(MutateJobSetPath).
		WithValidator(hook).
		WithValidatorCustomPath(ValidateJobSetPath).
		Complete()
	if err != nil {
		return fmt.Errorf("registering the JobSet webhooks: %w", err)
	}
	return nil
}
