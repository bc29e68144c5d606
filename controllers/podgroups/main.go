// Command podgroups is the jobset-addons podgroups controller: gang scheduling for JobSets
// through a Volcano PodGroup, a scheduler-plugins coscheduling PodGroup, or Kubernetes' own
// Workload and PodGroup (kube-scheduler alone), one gang for the whole JobSet or one per
// sequenced stage.
package main

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/spf13/pflag"
	batchv1 "k8s.io/api/batch/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/component-base/featuregate"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	coschedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"
	volcanov1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/jobset-addons/jobset-addons/controllers/podgroups/internal/backend"
	"github.com/jobset-addons/jobset-addons/controllers/podgroups/internal/backend/kaiapi"
	"github.com/jobset-addons/jobset-addons/controllers/podgroups/internal/controller"
	"github.com/jobset-addons/jobset-addons/controllers/podgroups/internal/webhook"
	"github.com/jobset-addons/jobset-addons/pkg/addon"
	"github.com/jobset-addons/jobset-addons/pkg/addon/checks/podgroups"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

func main() {
	var (
		common       addon.ControllerFlags
		names        backend.Names
		defaultQueue string
	)
	addon.Main(addon.Options{
		Name: "podgroups",
		// One PodGroup per JobSet is made as the JobSet is admitted: hundreds at once must not
		// queue behind the client's rate limit.
		QPS:         200,
		Burst:       400,
		AddToScheme: []func(*runtime.Scheme) error{jobsetv1alpha2.AddToScheme, volcanov1beta1.AddToScheme, coschedv1alpha1.AddToScheme, kaiapi.AddToScheme},
		// Only JobSets' Jobs and our own PodGroups and Workloads are cached.
		Uses: podgroups.Uses,
		Cache: map[client.Object]cache.ByObject{
			&batchv1.Job{}:                addon.JobsOfJobSets(nil), // their labels and conditions, not their pod templates
			&volcanov1beta1.PodGroup{}:    addon.ManagedBy(contract.PodGroupsManagedByValue),
			&coschedv1alpha1.PodGroup{}:   addon.ManagedBy(contract.PodGroupsManagedByValue),
			&kaiapi.PodGroup{}:            addon.ManagedBy(contract.PodGroupsManagedByValue),
			&schedulingv1beta1.PodGroup{}: addon.ManagedBy(contract.PodGroupsManagedByValue),
			&schedulingv1beta1.Workload{}: addon.ManagedBy(contract.PodGroupsManagedByValue),
			// Watched only where served, at one version (compositeServed below).
			backend.Meta(backend.CompositeKinds[0]): addon.ManagedBy(contract.PodGroupsManagedByValue),
			backend.Meta(backend.CompositeKinds[1]): addon.ManagedBy(contract.PodGroupsManagedByValue),
		},
		Kinds:              controller.Kinds,
		Waits:              controller.Waits,
		WaitReasons:        []string{controller.WaitReason},
		MutatingWebhooks:   true,
		ValidatingWebhooks: true,
		Flags: func(fs *pflag.FlagSet) {
			// 16, not more: a reconcile waits on one create, and 16 at once keep the API server as
			// busy as it gets; with 50, make bench ADDON=podgroups measured the creates' server
			// time at twice a bare client's and 500 PodGroups 0.83 as fast, against 0.97 with 16.
			common.Bind(fs, 16, "a reconcile mostly waits on one API call", "gang objects, and the gang objects its Job webhook makes for a Job that comes first")
			fs.StringVar(&names.Volcano, "volcano-scheduler-name", "volcano", "schedulerName given to the pods of JobSets gang-scheduled by Volcano")
			fs.StringVar(&names.Coscheduling, "coscheduling-scheduler-name", "scheduler-plugins-scheduler", "schedulerName given to the pods of JobSets gang-scheduled by coscheduling")
			fs.StringVar(&defaultQueue, "volcano-default-queue", "default", "Volcano queue of a JobSet that names none (Volcano's own default queue)")
			fs.StringVar(&names.KAI, "kai-scheduler-name", "kai-scheduler", "schedulerName given to the pods of JobSets gang-scheduled by KAI Scheduler")
			fs.StringVar(&names.KAIDefaultQueue, "kai-default-queue", "default-queue", "KAI queue of a JobSet that names none (the leaf queue of KAI's quick start)")
		},
		Setup: func(ctx context.Context, mgr ctrl.Manager, _ featuregate.FeatureGate) error {
			backends := backend.NewRegistry(names)
			installed, err := installedBackends(mgr, backends.All())
			if err != nil {
				return err
			}
			composite, err := compositeServed(mgr, installed)
			if err != nil {
				return err
			}
			if err := controller.IndexFields(ctx, mgr, backends, installed, composite); err != nil {
				return err
			}
			r := &controller.Reconciler{
				Client:        mgr.GetClient(),
				APIReader:     mgr.GetAPIReader(),
				Recorder:      addon.EventRecorder(mgr, "podgroups.jobset-addons.io"),
				Clock:         clock.RealClock{},
				Backends:      backends,
				Installed:     installed,
				CompositeKind: composite,
				DefaultQueue:  defaultQueue,
			}
			dryRunClient, err := addon.NewDryRunClient(mgr, common.WebhookQPS, common.WebhookBurst)
			if err != nil {
				return err
			}
			w := &webhook.JobSetWebhook{
				Backends:      backends,
				Installed:     func(s contract.Scheduler) bool { return installed[s] != nil },
				Classes:       r,
				Claims:        &webhook.ClaimsProbe{Client: mgr.GetClient(), Clock: clock.RealClock{}},
				CompositeKind: composite,
				DryRun:        &addon.DryRunner{Client: dryRunClient, Name: "podgroups", Remember: webhook.DryRunRemember},
				DefaultQueue:  defaultQueue,
				Reader:        mgr.GetClient(),
			}
			if err := webhook.Register(mgr, w); err != nil {
				return err
			}
			return r.SetupWithManager(ctx, mgr, common.ConcurrentReconciles)
		},
	})
}

// installedBackends are the backends whose kinds (PodGroup CRD; for kubernetes, the Workload
// API of scheduling.k8s.io/v1beta1) the apiserver serves now. A backend that is not installed
// is not watched (a watch on a kind that is not served fails the controller's start); JobSets
// asking for it are refused at admission.
func installedBackends(mgr ctrl.Manager, all []backend.Backend) (map[contract.Scheduler]backend.Backend, error) {
	installed := map[contract.Scheduler]backend.Backend{}
	var missing []string
backends:
	for _, b := range all {
		s := b.Scheduler()
		for _, gvk := range backend.Kinds(b) {
			_, err := mgr.GetRESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version)
			switch {
			case err == nil:
			case apimeta.IsNoMatchError(err):
				missing = append(missing, fmt.Sprintf("%s (%s %s)", s, gvk.GroupVersion(), gvk.Kind))
				continue backends
			default:
				return nil, fmt.Errorf("looking up the %s %s kind: %w", s, gvk.Kind, err)
			}
		}
		installed[s] = b
	}
	log := mgr.GetLogger().WithName("podgroups")
	if len(missing) > 0 {
		slices.Sort(missing)
		log.Info("PodGroup kinds not served: JobSets asking for these schedulers are refused until they are installed (kubernetes: the GenericWorkload gate and scheduling.k8s.io/v1beta1) and the controller restarted", "missing", strings.Join(missing, ", "))
	}
	if len(installed) == 0 {
		log.Info("No PodGroup CRD is served: every JobSet asking for gang scheduling is refused")
	}
	return installed, nil
}

// compositeServed is the kind of CompositePodGroup the apiserver serves (scheduling.k8s.io/v1beta1
// in Kubernetes 1.38, else v1alpha3; feature gate CompositePodGroup), which a composite gang
// (backend.Composites) needs. Not served, or no installed backend makes composite gangs: the
// zero kind; it is not watched, and JobSets asking for a composite gang are refused.
func compositeServed(mgr ctrl.Manager, installed map[contract.Scheduler]backend.Backend) (schema.GroupVersionKind, error) {
	if !slices.ContainsFunc(slices.Collect(maps.Values(installed)), func(b backend.Backend) bool { _, ok := b.(backend.Composites); return ok }) {
		return schema.GroupVersionKind{}, nil
	}
	gvk, err := backend.ServedCompositeKind(mgr.GetRESTMapper())
	if err != nil {
		return gvk, err
	}
	log := mgr.GetLogger().WithName("podgroups")
	if gvk.Empty() {
		log.Info("CompositePodGroup (scheduling.k8s.io/v1beta1 or v1alpha3) is not served: JobSets asking for a composite gang are refused until it is and the controller restarted")
	} else {
		log.Info("Composite gangs are made as CompositePodGroups of " + gvk.GroupVersion().String())
	}
	return gvk, nil
}
