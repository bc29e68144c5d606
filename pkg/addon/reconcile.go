package addon

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// ReconcileJobSet is the preamble of every add-on's Reconcile: it reads the JobSet key from c
// (the cache), and tells whether there is anything to do for it. There is not when the JobSet
// is gone (js is nil, and no error: a deletion is not a failure), when it is being deleted (the
// garbage collector takes what its owner references name), or when it is not this cluster's to
// act on (contract.ManagedElsewhere: its spec.managedBy names another controller). The context
// returned carries a logger with the JobSet, for the rest of the reconcile.
func ReconcileJobSet(ctx context.Context, c client.Reader, key types.NamespacedName) (_ context.Context, js *jobsetv1alpha2.JobSet, ok bool, err error) {
	js = &jobsetv1alpha2.JobSet{}
	if err := c.Get(ctx, key, js); err != nil {
		if apierrors.IsNotFound(err) {
			return ctx, nil, false, nil
		}
		return ctx, nil, false, err
	}
	log := ctrl.LoggerFrom(ctx).WithValues("jobset", klog.KObj(js))
	ctx = ctrl.LoggerInto(ctx, log)
	switch {
	case !js.DeletionTimestamp.IsZero():
		log.V(2).Info("Skipping a JobSet being deleted", "uid", js.UID)
		return ctx, js, false, nil
	case contract.ManagedElsewhere(js.Spec.ManagedBy):
		log.V(2).Info("Skipping a JobSet managed elsewhere", "managedBy", *js.Spec.ManagedBy)
		return ctx, js, false, nil
	}
	return ctx, js, true, nil
}
