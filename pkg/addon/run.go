package addon

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"github.com/open-policy-agent/cert-controller/pkg/rotator"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/pflag"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/component-base/featuregate"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/pkg/addon/version"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// Options is what a controller binary declares about itself.
type Options struct {
	// Name of the controller ("volumeclaims"): it names the lease, the certificate secret,
	// the webhook Service and configurations, unless flags say otherwise.
	Name string
	// AddToScheme registers the API types the controller reads and writes beyond client-go's.
	AddToScheme []func(*runtime.Scheme) error
	// FeatureGates the controller understands; --feature-gates switches them.
	FeatureGates map[featuregate.Feature]featuregate.FeatureSpec
	// Cache scopes informers per type (label selectors, namespaces), so that memory grows
	// with the objects the add-on manages, not with the cluster.
	Cache map[client.Object]cache.ByObject
	// Uses, if set, tells whether a JobSet uses the add-on: of the JobSets that do not, and of
	// their Jobs if Jobs are cached (JobsOfJobSets), the cache keeps only their metadata.
	Uses func(*jobsetv1alpha2.JobSet) bool
	// MutatingWebhooks and ValidatingWebhooks say which webhook configurations the binary
	// serves; with either set, the webhook server starts once the serving certificate is ready.
	MutatingWebhooks, ValidatingWebhooks bool
	// QPS and Burst are the defaults of --kube-api-qps and --kube-api-burst (50 and 100 when
	// zero): a controller that creates many objects at once raises them.
	QPS   float32
	Burst int
	// Flags registers the controller's own flags beside the shared ones; Setup reads them.
	Flags func(fs *pflag.FlagSet)
	// Kinds the add-on writes: jobset_addons_objects_total has their series from the start.
	Kinds []string
	// Waits, if set, lists from the cache what the JobSets that use the add-on wait on
	// (jobset_addons_jobsets_waiting, read at each scrape); WaitReasons are its reasons,
	// reported at 0 when nothing waits on them.
	Waits       func(ctx context.Context, c client.Reader) ([]Wait, error)
	WaitReasons []string
	// Setup registers controllers and webhooks. It runs before the manager starts, so that the
	// informers it makes list together as the manager starts, not one after the other; the
	// manager it is given adds the webhook server only once the certificate is ready.
	Setup func(ctx context.Context, mgr ctrl.Manager, gates featuregate.FeatureGate) error
}

func (o Options) webhooks() bool { return o.MutatingWebhooks || o.ValidatingWebhooks }

// stdout is where --version prints; tests replace it.
var stdout io.Writer = os.Stdout

// Main runs the controller until SIGTERM or SIGINT and exits the process.
func Main(opts Options) {
	if err := Run(ctrl.SetupSignalHandler(), opts, os.Args[1:], nil); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", opts.Name, err)
		os.Exit(1)
	}
}

// Run parses args, builds the manager and runs it until ctx is done. restCfg, when nil, comes
// from --kubeconfig, $KUBECONFIG or the in-cluster configuration. Its steps: the flags, the
// logger, the client configuration, the manager and its caches, the health and readiness
// checks, the shutdown delay, the Events and Setup, then the manager until the signal.
func Run(ctx context.Context, opts Options, args []string, restCfg *rest.Config) error {
	cfg, gates, kubeconfig, done, err := parseArgs(opts, args)
	if err != nil || done {
		return err
	}
	log, err := startLogging(opts, cfg)
	if err != nil {
		return err
	}
	if restCfg, err = clientConfig(restCfg, kubeconfig, opts, cfg); err != nil {
		return err
	}
	m, err := newManager(ctx, opts, cfg, restCfg, log)
	if err != nil {
		return err
	}
	if err := m.registerMetrics(ctx, opts); err != nil {
		return err
	}
	ready, err := addChecks(m.Manager, opts, cfg)
	if err != nil {
		return err
	}
	ctx, cancel, err := withShutdownDelay(ctx, m.Manager, cfg, log)
	if err != nil {
		return err
	}
	defer cancel()
	stopEvents, err := m.setup(ctx, opts, cfg, gates, restCfg)
	if err != nil {
		return err
	}
	defer stopEvents()
	log.Info("Controllers and webhooks registered", "featureGates", enabledGates(gates, opts.FeatureGates), "clientGates", changedClientGates())
	go ready.serveWebhooks(ctx, m.Manager, opts)

	log.Info("Starting manager", "leaderElection", cfg.LeaderElect, "leaseID", cfg.LeaderElectionID)
	if err := m.Start(ctx); err != nil {
		return fmt.Errorf("running manager: %w", err)
	}
	log.Info("Stopped")
	return nil
}

// parseArgs reads the flags: the shared ones, the feature gates (the controller's and
// client-go's) and the controller's own. done is true when nothing is to run (--version).
func parseArgs(opts Options, args []string) (cfg Config, gates featuregate.MutableFeatureGate, kubeconfig string, done bool, err error) {
	gates = featuregate.NewFeatureGate()
	if err := gates.Add(opts.FeatureGates); err != nil {
		return cfg, nil, "", false, fmt.Errorf("registering feature gates: %w", err)
	}
	if err := withClientGates(gates); err != nil {
		return cfg, nil, "", false, fmt.Errorf("registering client-go's feature gates: %w", err)
	}
	fs := pflag.NewFlagSet(opts.Name, pflag.ContinueOnError)
	cfg.bindFlags(fs, opts.Name, gates, opts.QPS, opts.Burst)
	kubeconfigFlag := fs.String("kubeconfig", "", "Path to a kubeconfig; empty = $KUBECONFIG or in-cluster")
	showVersion := fs.Bool("version", false, "Print the version and exit")
	if opts.Flags != nil {
		opts.Flags(fs)
	}
	if err := fs.Parse(args); err != nil {
		return cfg, nil, "", false, err
	}
	if *showVersion {
		_, err := fmt.Fprintf(stdout, "%s %s\n", opts.Name, version.String())
		return cfg, gates, "", true, err
	}
	return cfg, gates, *kubeconfigFlag, false, cfg.validate()
}

// startLogging sets controller-runtime's and klog's logger, and the Go memory limit from the
// container's.
func startLogging(opts Options, cfg Config) (logr.Logger, error) {
	log, err := newLogger(cfg.LogLevel, cfg.LogFormat)
	if err != nil {
		return log, err
	}
	ctrl.SetLogger(log)
	klog.SetLogger(log)
	log = log.WithName(opts.Name)
	log.Info("Starting", "version", version.String())
	if limit, err := setMemoryLimit(cgroupMemoryMax); err != nil {
		log.Error(err, "No Go memory limit set from the container's")
	} else if limit > 0 {
		log.Info("Go memory limit set from the container's", "bytes", limit, "share", memoryLimitShare)
	}
	return log, nil
}

// clientConfig is restCfg (or the one kubeconfig names) with the add-on's rate limits,
// compression and user agent.
func clientConfig(restCfg *rest.Config, kubeconfig string, opts Options, cfg Config) (*rest.Config, error) {
	if restCfg == nil {
		var err error
		if restCfg, err = loadRESTConfig(kubeconfig); err != nil {
			return nil, err
		}
	}
	restCfg = rest.CopyConfig(restCfg)
	restCfg.QPS, restCfg.Burst = cfg.QPS, cfg.Burst
	restCfg.DisableCompression = !cfg.Gzip
	restCfg.UserAgent = "jobset-addons-" + opts.Name
	return restCfg, nil
}

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
	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	for _, add := range opts.AddToScheme {
		if err := add(scheme); err != nil {
			return nil, fmt.Errorf("building scheme: %w", err)
		}
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

// readiness is what /readyz waits for: the certificates, then the webhook server.
type readiness struct {
	certs   <-chan struct{}
	started atomic.Pointer[healthz.Checker]
}

// addChecks sets up the certificates and adds /healthz and the webhooks' /readyz check.
func addChecks(mgr ctrl.Manager, opts Options, cfg Config) (*readiness, error) {
	certsReady, err := setupCertificates(mgr, opts, cfg)
	if err != nil {
		return nil, err
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return nil, err
	}
	r := &readiness{certs: certsReady}
	return r, mgr.AddReadyzCheck("webhooks", func(req *http.Request) error {
		select {
		case <-r.certs:
		default:
			return errors.New("webhook certificates are not ready")
		}
		if !opts.webhooks() {
			return nil
		}
		started := r.started.Load()
		if started == nil {
			return errors.New("webhook server is not started")
		}
		return (*started)(req)
	})
}

// serveWebhooks adds the webhook server to the manager once the certificate exists:
// controller-runtime adds it on the first GetWebhookServer call, and it cannot start without
// tls.crt.
func (r *readiness) serveWebhooks(ctx context.Context, mgr ctrl.Manager, opts Options) {
	select {
	case <-ctx.Done():
		return
	case <-r.certs:
	}
	if opts.webhooks() {
		// The manager's first GetWebhookServer adds the server, which starts at once.
		started := mgr.GetWebhookServer().StartedChecker()
		r.started.Store(&started)
	}
}

// withShutdownDelay is the context the manager runs in: done --shutdown-delay after the
// signal (signalled), during which /readyz fails while everything else still serves.
func withShutdownDelay(signalled context.Context, mgr ctrl.Manager, cfg Config, log logr.Logger) (context.Context, context.CancelFunc, error) {
	ctx, cancel := context.WithCancel(context.WithoutCancel(signalled))
	var stopping atomic.Bool
	if err := mgr.AddReadyzCheck("shutdown", func(*http.Request) error {
		if stopping.Load() {
			return errors.New("shutting down")
		}
		return nil
	}); err != nil {
		cancel()
		return nil, nil, err
	}
	go func() {
		select {
		case <-ctx.Done():
			return
		case <-signalled.Done():
		}
		stopping.Store(true)
		if cfg.ShutdownDelay > 0 {
			log.Info("Stopping: still serving, not ready, for the shutdown delay", "delay", cfg.ShutdownDelay)
			t := time.NewTimer(cfg.ShutdownDelay)
			defer t.Stop()
			select {
			case <-t.C:
			case <-ctx.Done():
			}
		}
		cancel()
	}()
	return ctx, cancel, nil
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

func setupCertificates(mgr ctrl.Manager, opts Options, cfg Config) (<-chan struct{}, error) {
	ready := make(chan struct{})
	if !opts.webhooks() || cfg.CertMode == CertModeExternal {
		close(ready)
		return ready, nil
	}
	var hooks []rotator.WebhookInfo
	if opts.MutatingWebhooks {
		hooks = append(hooks, rotator.WebhookInfo{Name: cfg.WebhookConfigName, Type: rotator.Mutating})
	}
	if opts.ValidatingWebhooks {
		hooks = append(hooks, rotator.WebhookInfo{Name: cfg.WebhookConfigName, Type: rotator.Validating})
	}
	svc := fmt.Sprintf("%s.%s.svc", cfg.WebhookService, cfg.Namespace)
	secret := types.NamespacedName{Namespace: cfg.Namespace, Name: cfg.CertSecretName}
	err := rotator.AddRotator(scopeToSecret(mgr, secret), &rotator.CertRotator{
		SecretKey:      secret,
		CertDir:        cfg.CertDir,
		CAName:         "jobset-addons-" + opts.Name + "-ca",
		CAOrganization: "jobset-addons",
		DNSName:        svc,
		ExtraDNSNames:  []string{svc + ".cluster.local"},
		IsReady:        ready,
		Webhooks:       hooks,
		// Every replica needs the certificate to serve webhooks, leader or not.
		RequireLeaderElection: false,
		EnableReadinessCheck:  true,
	})
	if err != nil {
		return nil, fmt.Errorf("adding certificate rotator: %w", err)
	}
	return ready, nil
}

func loadRESTConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig != "" {
		c, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
		if err != nil {
			return nil, fmt.Errorf("loading --kubeconfig %s: %w", kubeconfig, err)
		}
		return c, nil
	}
	c, err := ctrl.GetConfig()
	if err != nil {
		return nil, fmt.Errorf("loading kubeconfig: %w", err)
	}
	return c, nil
}

func enabledGates(gates featuregate.FeatureGate, known map[featuregate.Feature]featuregate.FeatureSpec) map[string]bool {
	out := make(map[string]bool, len(known))
	for f := range known {
		out[string(f)] = gates.Enabled(f)
	}
	return out
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
