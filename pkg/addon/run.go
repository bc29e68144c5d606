package addon

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/go-logr/logr"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/component-base/featuregate"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/pkg/addon/version"
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
