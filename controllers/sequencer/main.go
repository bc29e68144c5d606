// Command sequencer is the jobset-addons sequencer controller: ReplicatedJobs of a JobSet that
// start in order (KEP-672 ExecutionPolicy) or once several predecessors are Ready or Complete
// (fan-in), held back by a pod scheduling gate that it lifts; and start barriers, which hold
// every main container of a JobSet or stage until all its pods are placed and ready (the
// barrier's init container is ./barrier).
package main

import (
	"context"

	"github.com/spf13/pflag"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/component-base/featuregate"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/controllers/sequencer/internal/barrier"
	"github.com/jobset-addons/jobset-addons/controllers/sequencer/internal/controller"
	"github.com/jobset-addons/jobset-addons/controllers/sequencer/internal/webhook"
	"github.com/jobset-addons/jobset-addons/pkg/addon"
	"github.com/jobset-addons/jobset-addons/pkg/addon/checks/sequencer"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

func main() {
	var workers int
	var common addon.ControllerFlags
	var barrierFlagSet barrierFlags
	// The barrier pods' cache, made by Setup: jobset_addons_jobsets_waiting{reason="barrier"}
	// reads it.
	var barrierPods client.Reader
	addon.Main(addon.Options{
		Name: "sequencer",
		// A stage of hundreds of pods is released at once: its patches must not queue.
		QPS:         200,
		Burst:       400,
		AddToScheme: []func(*runtime.Scheme) error{jobsetv1alpha2.AddToScheme},
		// Only JobSets' Jobs, and only the pods the webhook gated, are cached.
		Uses: sequencer.Uses,
		Cache: map[client.Object]cache.ByObject{
			&batchv1.Job{}: addon.JobsOfJobSets(nil), // their counts and status, not their pod templates
			// The gated pods, of which the controller reads the metadata and the gates.
			&corev1.Pod{}: addon.Trimmed(cache.ByObject{Label: labels.SelectorFromSet(labels.Set{contract.SequencerGatedLabelKey: contract.EnabledValue})}, func(obj any) {
				if p, ok := obj.(*corev1.Pod); ok {
					p.Spec, p.Status = corev1.PodSpec{SchedulingGates: p.Spec.SchedulingGates}, corev1.PodStatus{}
				}
			}),
			// The Job controller's FailedCreate Events: pods refused, told on the JobSet.
			&corev1.Event{}: addon.FailedCreateEvents(),
			// The nodes of barrier pods: a pod on a node not Ready does not count as waiting.
			&corev1.Node{}: addon.Trimmed(cache.ByObject{}, addon.TrimNode),
		},
		Kinds: controller.Kinds,
		Waits: func(ctx context.Context, c client.Reader) ([]addon.Wait, error) {
			waits, err := controller.Waits(ctx, c)
			if err != nil || barrierPods == nil {
				return waits, err
			}
			atBarrier, err := barrier.Waits(ctx, c, barrierPods)
			return append(waits, atBarrier...), err
		},
		WaitReasons:        []string{controller.WaitReason, barrier.WaitReason},
		MutatingWebhooks:   true,
		ValidatingWebhooks: true,
		Flags: func(fs *pflag.FlagSet) {
			common.Bind(fs, 50, "a reconcile mostly waits on API calls: many at once keep a hand-off from queueing behind others", "barrier pods")
			fs.IntVar(&workers, "pod-workers", 32, "Pods one reconcile releases (or tells their start barrier) at once")
			barrierFlagSet.add(fs)
		},
		Setup: func(ctx context.Context, mgr ctrl.Manager, _ featuregate.FeatureGate) error {
			settings, err := barrierFlagSet.settings()
			if err != nil {
				return err
			}
			if err := webhook.Register(mgr, settings, common.WebhookQPS, common.WebhookBurst); err != nil {
				return err
			}
			if err := controller.IndexFields(ctx, mgr); err != nil {
				return err
			}
			if err := addon.SetupPodsRefused(mgr, "sequencer.jobset-addons.io", barrier.PodsRefused); err != nil {
				return err
			}
			r := &controller.Reconciler{
				Client:   mgr.GetClient(),
				Recorder: addon.EventRecorder(mgr, "sequencer.jobset-addons.io"),
				Clock:    clock.RealClock{},
				Workers:  workers,
			}
			if err := r.SetupWithManager(mgr, common.ConcurrentReconciles); err != nil {
				return err
			}
			pods, err := barrier.PodCache(mgr)
			if err != nil {
				return err
			}
			barrierPods = pods // before the metrics server starts: Setup runs before the manager
			b := &barrier.Reconciler{
				Client:   mgr.GetClient(),
				Pods:     pods,
				Nodes:    mgr.GetClient(),
				Recorder: addon.EventRecorder(mgr, "sequencer.jobset-addons.io"),
				Clock:    clock.RealClock{},
				Workers:  workers,
			}
			return b.SetupWithManager(mgr, pods, common.ConcurrentReconciles)
		},
	})
}
