// Command resourceclaims is the jobset-addons resourceclaims controller: one DRA ResourceClaim
// per Job of a JobSet and template, shared by the Job's pods and referenced by the containers
// the template names (JobSet KEP-762).
package main

import (
	"context"

	"github.com/spf13/pflag"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/component-base/featuregate"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/controllers/resourceclaims/internal/claims"
	"github.com/jobset-addons/jobset-addons/controllers/resourceclaims/internal/controller"
	"github.com/jobset-addons/jobset-addons/controllers/resourceclaims/internal/webhook"
	"github.com/jobset-addons/jobset-addons/pkg/addon"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

func main() {
	var workers int
	var adoptQPS float32
	var adoptBurst int
	var common addon.ControllerFlags
	addon.Main(addon.Options{
		Name:         "resourceclaims",
		QPS:          200,
		Burst:        300,
		AddToScheme:  []func(*runtime.Scheme) error{jobsetv1alpha2.AddToScheme},
		FeatureGates: claims.Gates,
		// Only the claims the add-on made, and only JobSet Jobs, are cached.
		Uses: controller.HasTemplates,
		Cache: map[client.Object]cache.ByObject{
			&resourcev1.ResourceClaim{}: addon.ManagedBy(contract.ResourceClaimsManagedByValue),
			// Of a Job's pod template, only the pod's own claims, of the Jobs with claim templates:
			// a claim of a template's name there wins over the template's.
			&batchv1.Job{}: addon.JobsOfJobSets(func(j *batchv1.Job) corev1.PodTemplateSpec {
				if !claims.HasTemplates(j) {
					return corev1.PodTemplateSpec{}
				}
				return corev1.PodTemplateSpec{Spec: corev1.PodSpec{ResourceClaims: j.Spec.Template.Spec.ResourceClaims}}
			}),
			// The Job controller's FailedCreate Events: pods refused because of a claim, told on
			// the JobSet.
			&corev1.Event{}: addon.FailedCreateEvents(),
		},
		Kinds:              controller.Kinds,
		Waits:              controller.Waits,
		WaitReasons:        []string{controller.WaitReason},
		MutatingWebhooks:   true,
		ValidatingWebhooks: true,
		Flags: func(fs *pflag.FlagSet) {
			common.Bind(fs, 10, "", "claim templates, and the claims its Job webhook makes for a Job that comes first")
			fs.IntVar(&workers, "claim-workers", 16, "API calls (claim creates, deletes) one reconcile makes at once")
			fs.Float32Var(&adoptQPS, "adopt-qps", 50, "Queries per second for handing claims made ahead of their Jobs to the Jobs, apart from --kube-api-qps, so that this housekeeping never delays a claim's creation")
			fs.IntVar(&adoptBurst, "adopt-burst", 100, "Burst for --adopt-qps")
		},
		Setup: func(ctx context.Context, mgr ctrl.Manager, gates featuregate.FeatureGate) error {
			if err := webhook.Register(mgr, gates, common.WebhookQPS, common.WebhookBurst); err != nil {
				return err
			}
			rc := rest.CopyConfig(mgr.GetConfig())
			rc.QPS, rc.Burst = adoptQPS, adoptBurst
			adopter, err := client.New(rc, client.Options{Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper()})
			if err != nil {
				return err
			}
			if err := addon.SetupPodsRefused(mgr, "resourceclaims.jobset-addons.io", controller.PodsRefused); err != nil {
				return err
			}
			if err := controller.IndexFields(ctx, mgr); err != nil {
				return err
			}
			r := &controller.Reconciler{
				Client:    mgr.GetClient(),
				Adopter:   adopter,
				APIReader: mgr.GetAPIReader(),
				Recorder:  addon.EventRecorder(mgr, "resourceclaims.jobset-addons.io"),
				Gates:     gates,
				Workers:   workers,
			}
			return r.SetupWithManager(ctx, mgr, common.ConcurrentReconciles)
		},
	})
}
