package addon

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/component-base/featuregate"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// runManager is the manager with what its later steps need of its making.
type runManager struct {
	ctrl.Manager
	httpClient *http.Client
	hookServer webhook.Server
	uses       *usesCache
}

// newManager builds the manager: the scheme, one HTTP client (one connection) and one mapper
// from the start (the kinds served are looked up once, and Setup's lookups find them known),
// caches of the kinds served only, trimmed to the JobSets the add-on uses (Options.Uses).
func newManager(ctx context.Context, opts Options, cfg Config, restCfg *rest.Config, log logr.Logger) (*runManager, error) {
	scheme, err := newScheme(opts)
	if err != nil {
		return nil, err
	}
	httpClient, err := rest.HTTPClientFor(restCfg)
	if err != nil {
		return nil, err
	}
	mapper, err := apiutil.NewDynamicRESTMapper(restCfg, httpClient)
	if err != nil {
		return nil, fmt.Errorf("discovering the API: %w", err)
	}
	byObject, err := servedOnly(mapper, scheme, opts.Cache, log)
	if err != nil {
		return nil, err
	}
	m := &runManager{httpClient: httpClient}
	if opts.Uses != nil {
		m.uses = &usesCache{uses: opts.Uses, waitUpTo: jobSetWait, elsewhere: newElsewhere()}
		byObject = m.uses.withUses(byObject)
	}
	m.hookServer = webhook.NewServer(webhook.Options{
		Host:    cfg.WebhookHost,
		Port:    cfg.WebhookPort,
		CertDir: cfg.CertDir,
		TLSOpts: []func(*tls.Config){webhookTLS},
	})
	m.Manager, err = ctrl.NewManager(restCfg, ctrl.Options{
		Scheme:                        scheme,
		MapperProvider:                func(*rest.Config, *http.Client) (apimeta.RESTMapper, error) { return mapper, nil },
		Metrics:                       metricsserver.Options{BindAddress: cfg.MetricsAddr},
		HealthProbeBindAddress:        cfg.HealthAddr,
		PprofBindAddress:              cfg.PprofAddr,
		LeaderElection:                cfg.LeaderElect,
		LeaderElectionID:              cfg.LeaderElectionID,
		LeaderElectionNamespace:       cfg.LeaderElectionNamespace,
		LeaderElectionReleaseOnCancel: true,
		LeaseDuration:                 &cfg.LeaseDuration,
		RenewDeadline:                 &cfg.RenewDeadline,
		RetryPeriod:                   &cfg.RetryPeriod,
		NewCache:                      newPromptCache,
		Cache: cache.Options{
			HTTPClient:       httpClient,
			ByObject:         byObject,
			DefaultTransform: cache.TransformStripManagedFields(),
		},
		Client:        client.Options{HTTPClient: httpClient},
		WebhookServer: m.hookServer,
	})
	if err != nil {
		return nil, fmt.Errorf("creating manager: %w", err)
	}
	if m.uses != nil {
		if err := m.uses.from(ctx, m.GetCache()); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// newScheme is client-go's scheme with the add-on's API types (Options.AddToScheme).
func newScheme(opts Options) (*runtime.Scheme, error) {
	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	for _, add := range opts.AddToScheme {
		if err := add(scheme); err != nil {
			return nil, fmt.Errorf("building scheme: %w", err)
		}
	}
	return scheme, nil
}

// registerMetrics registers the shared metrics (metrics.go) with the label addon.
func (m *runManager) registerMetrics(ctx context.Context, opts Options) error {
	if err := registerMetrics(ctrlmetrics.Registry, opts.Name, opts.Kinds); err != nil {
		return fmt.Errorf("registering metrics: %w", err)
	}
	watchLeader(ctx, m.Manager)
	if opts.Waits == nil {
		return nil
	}
	c := m.GetCache()
	w := NewWaits("jobset_addons_jobsets_waiting", "JobSets waiting on something the add-on owns (a stage, a barrier, a gang, a claim), by reason.",
		opts.WaitReasons, func(ctx context.Context) ([]Wait, error) { return opts.Waits(ctx, c) })
	if err := RegisterWaits(ctrlmetrics.Registry, opts.Name, w); err != nil && !errors.As(err, &prometheus.AlreadyRegisteredError{}) {
		return fmt.Errorf("registering metrics: %w", err)
	}
	return nil
}

// setup starts the Events, adds the leader's "managed elsewhere" Events and runs the
// controller's Setup. Setup runs on a manager that is not started: controller-runtime holds
// the manager's lock while it starts the caches and waits for them, so that what Setup would
// add once started (informers, controllers) would wait for the informers made before it, and
// list after them.
func (m *runManager) setup(ctx context.Context, opts Options, cfg Config, gates featuregate.FeatureGate, restCfg *rest.Config) (stop func(), err error) {
	eventBroadcaster, eventsClient, sink, err := startEvents(ctx, restCfg, m.httpClient, cfg.EventQPS, cfg.EventBurst)
	if err != nil {
		return nil, err
	}
	if m.uses != nil {
		// The leader tells of the JobSets managed elsewhere that use the add-on (JobSetsUsing).
		if err := m.Add(manager.RunnableFunc(func(ctx context.Context) error {
			return m.uses.elsewhere.run(ctx, eventsClient, opts.Name+"."+contract.Domain)
		})); err != nil {
			eventBroadcaster.Shutdown()
			return nil, err
		}
	}
	if opts.Setup != nil {
		if err := opts.Setup(ctx, setupManager{Manager: m.Manager, broadcaster: eventBroadcaster, webhooks: m.hookServer}, gates); err != nil {
			eventBroadcaster.Shutdown()
			return nil, fmt.Errorf("setting up controllers and webhooks: %w", err)
		}
	}
	return func() {
		eventBroadcaster.Shutdown()
		if n := sink.Unwritten(); n > 0 {
			m.GetLogger().WithName(opts.Name).Info("Events not written: the process stopped while they waited (--event-qps)", "events", n)
		}
	}, nil
}

// servedOnly is cache, without the kinds the API server does not serve (an optional CRD, such
// as one gang scheduler's PodGroup): the manager cannot be created with a cache option for a
// kind it cannot map. The controller finds out itself which kinds it may watch.
func servedOnly(mapper apimeta.RESTMapper, scheme *runtime.Scheme, byObject map[client.Object]cache.ByObject, log logr.Logger) (map[client.Object]cache.ByObject, error) {
	out := make(map[client.Object]cache.ByObject, len(byObject))
	for obj, opts := range byObject {
		gvk, err := apiutil.GVKForObject(obj, scheme)
		if err != nil {
			return nil, err
		}
		if _, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version); err != nil {
			if apimeta.IsNoMatchError(err) {
				log.Info("Kind not served by the API server: not cached", "kind", gvk.String())
				continue
			}
			return nil, fmt.Errorf("looking up %s: %w", gvk, err)
		}
		out[obj] = opts
	}
	return out, nil
}
