// Command volumeclaims is the jobset-addons volumeclaims controller: PVCs made per pod or
// shared for JobSets, with retention when the JobSet completes, fails or is deleted.
package main

import (
	"context"

	"github.com/spf13/pflag"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/component-base/featuregate"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/controllers/volumeclaims/internal/controller"
	"github.com/jobset-addons/jobset-addons/controllers/volumeclaims/internal/webhook"
	"github.com/jobset-addons/jobset-addons/pkg/addon"
	"github.com/jobset-addons/jobset-addons/pkg/addon/checks/volumeclaims"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

func main() {
	var workers int
	var common addon.ControllerFlags
	addon.Main(addon.Options{
		Name: "volumeclaims",
		// 2,000 per-pod PVCs in under 15 s on the testbed (make bench ADDON=volumeclaims).
		QPS:         200,
		Burst:       300,
		AddToScheme: []func(*runtime.Scheme) error{jobsetv1alpha2.AddToScheme},
		// Only the PVCs the add-on made are cached; a user's PVC of a desired name shows
		// itself when its creation collides.
		Uses: volumeclaims.Uses,
		Cache: map[client.Object]cache.ByObject{
			&corev1.PersistentVolumeClaim{}: addon.ManagedBy(contract.VolumeClaimsManagedByValue),
			// The Job controller's FailedCreate Events and the Jobs they are about (their labels,
			// not their pod templates): pods refused because of a PVC, told on the JobSet.
			&corev1.Event{}: addon.FailedCreateEvents(),
			&batchv1.Job{}:  addon.JobsOfJobSets(nil),
			// Every pod, trimmed to the PVCs it mounts, its node and phase: the expiry's own
			// clock finds a PVC's pods by claim name (controller.PodClaimIndex).
			&corev1.Pod{}: controller.PodClaims(),
			// whenNodeLost: what a PV's node affinity and a node's health read.
			&corev1.Node{}: addon.Trimmed(cache.ByObject{}, addon.TrimNode),
		},
		Kinds:              controller.Kinds,
		MutatingWebhooks:   true,
		ValidatingWebhooks: true,
		Flags: func(fs *pflag.FlagSet) {
			common.Bind(fs, 10, "", "PVC templates, and the PVCs its Pod webhook makes for a pod that comes first")
			fs.IntVar(&workers, "claim-workers", 16, "API calls (PVC creates, deletes) one reconcile makes at once")
		},
		Setup: func(ctx context.Context, mgr ctrl.Manager, _ featuregate.FeatureGate) error {
			if err := webhook.Register(mgr, common.WebhookQPS, common.WebhookBurst); err != nil {
				return err
			}
			if err := addon.SetupPodsRefused(mgr, "volumeclaims.jobset-addons.io", controller.PodsRefused); err != nil {
				return err
			}
			rec := addon.EventRecorder(mgr, "volumeclaims.jobset-addons.io")
			r := &controller.Reconciler{
				Client:   mgr.GetClient(),
				Reader:   mgr.GetAPIReader(),
				Recorder: rec,
				Workers:  workers,
			}
			if err := r.SetupWithManager(ctx, mgr, common.ConcurrentReconciles); err != nil {
				return err
			}
			e := &controller.Expiry{Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), Recorder: rec}
			if err := e.SetupWithManager(ctx, mgr, common.ConcurrentReconciles); err != nil {
				return err
			}
			n := &controller.NodeLoss{Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), Recorder: rec, Clock: clock.RealClock{}}
			return n.SetupWithManager(ctx, mgr, common.ConcurrentReconciles)
		},
	})
}
