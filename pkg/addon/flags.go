package addon

import (
	"fmt"
	"os"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/component-base/featuregate"
)

// CertMode says where the webhook serving certificate comes from.
type CertMode string

const (
	// CertModeSelfSigned: open-policy-agent/cert-controller creates a CA and a serving
	// certificate in a Secret, rotates them, and injects the CA into the webhook configurations.
	CertModeSelfSigned CertMode = "self-signed"
	// CertModeExternal: tls.crt and tls.key are mounted into --cert-dir by someone else
	// (cert-manager, or the testbed), and the webhook configurations carry their CA already.
	CertModeExternal CertMode = "external"
)

// Config holds every flag of the shared runtime.
type Config struct {
	MetricsAddr string
	HealthAddr  string
	PprofAddr   string

	LeaderElect             bool
	LeaderElectionID        string
	LeaderElectionNamespace string
	LeaseDuration           time.Duration
	RenewDeadline           time.Duration
	RetryPeriod             time.Duration

	QPS   float32
	Burst int
	// Gzip asks the API server to compress large responses.
	Gzip bool
	// EventQPS and EventBurst rate-limit Events on a client of their own (EventRecorder).
	EventQPS   float32
	EventBurst int

	LogLevel  string
	LogFormat string

	WebhookHost       string
	WebhookPort       int
	CertDir           string
	CertMode          CertMode
	CertSecretName    string
	WebhookService    string
	WebhookConfigName string
	Namespace         string

	// ShutdownDelay is how long the process keeps serving after SIGTERM, not ready, before it
	// stops (--shutdown-delay).
	ShutdownDelay time.Duration
}

// bindFlags registers the shared flags on fs, with defaults derived from the controller name.
func (c *Config) bindFlags(fs *pflag.FlagSet, name string, gates featuregate.MutableFeatureGate, qps float32, burst int) {
	ns := os.Getenv("POD_NAMESPACE")
	if ns == "" {
		ns = "jobset-addons-system"
	}
	fs.StringVar(&c.MetricsAddr, "metrics-bind-address", ":8080", `Address of the Prometheus /metrics endpoint; "0" turns it off`)
	fs.StringVar(&c.HealthAddr, "health-probe-bind-address", ":8081", "Address of the /healthz and /readyz endpoints")
	fs.StringVar(&c.PprofAddr, "pprof-bind-address", "", `Address of Go's /debug/pprof endpoints, for profiling; empty (the default) or "0" turns them off`)

	fs.BoolVar(&c.LeaderElect, "leader-elect", true, "Elect a leader so that only one replica reconciles at a time")
	fs.StringVar(&c.LeaderElectionID, "leader-election-id", name+".jobset-addons.io", "Name of the Lease used for leader election")
	fs.StringVar(&c.LeaderElectionNamespace, "leader-election-namespace", ns, "Namespace of the leader election Lease")
	// Shorter than client-go's usual 15 s / 10 s / 2 s: a standby takes over from a leader that
	// died without releasing its Lease within lease duration + up to 2.4 retry periods (a standby
	// sees the lease's last renewal up to one jittered retry late, and retries up to 2.2 s apart),
	// then its controllers start on synced caches. With 10 s / 8 s / 1 s e2e/suites/chaos
	// TestLeaderFailover measured 10.1-13.2 s to take the Lease and 11.7-15.9 s to act; 8 s / 6 s
	// leave the renewals 6 s to succeed and bring the worst case under 15 s.
	fs.DurationVar(&c.LeaseDuration, "leader-election-lease-duration", 8*time.Second, "How long a non-leader waits before it tries to take the lease")
	fs.DurationVar(&c.RenewDeadline, "leader-election-renew-deadline", 6*time.Second, "How long the leader retries renewing before it gives up leadership")
	fs.DurationVar(&c.RetryPeriod, "leader-election-retry-period", time.Second, "How long clients wait between leader election attempts")

	if qps <= 0 {
		qps = 50
	}
	if burst <= 0 {
		burst = 100
	}
	fs.Float32Var(&c.QPS, "kube-api-qps", qps, "Queries per second to the Kubernetes API server")
	fs.IntVar(&c.Burst, "kube-api-burst", burst, "Burst of queries to the Kubernetes API server")
	fs.BoolVar(&c.Gzip, "kube-api-gzip", false, "Ask the Kubernetes API server to gzip large responses (lists). Off by default: next to the API server bandwidth is cheap, and compressing a list of thousands of objects costs the API server CPU that its other requests wait for")
	// Events go through a client of their own with a lower limit (as kubelet's --event-qps):
	// when hundreds of JobSets arrive at once, one Event per object made would double the
	// writes the API server takes in the burst and slow the objects themselves; the Events
	// follow a few seconds later instead.
	fs.Float32Var(&c.EventQPS, "event-qps", 20, "Events per second written to the Kubernetes API server (a client of their own, apart from --kube-api-qps); each first waits up to 2s for the reconciles in flight to end; those still waiting when the process stops are not written, and one log line counts them")
	fs.IntVar(&c.EventBurst, "event-burst", 20, "Burst of Events written to the Kubernetes API server")

	fs.StringVar(&c.LogLevel, "log-level", "info", "Log level: debug, info, error, or a verbosity number (0 = info, higher = more)")
	fs.StringVar(&c.LogFormat, "log-format", "json", "Log format: json or console")
	fs.DurationVar(&c.ShutdownDelay, "shutdown-delay", 0, "After SIGTERM, how long to go on serving webhooks (and reconciling) while /readyz fails, before stopping: "+
		"time for the Service's endpoints and every node's kube-proxy to stop sending the API server here, so that no admission request meets a pod that is gone (the chart sets 5s)")

	fs.StringVar(&c.WebhookHost, "webhook-host", "", "Address the webhook server listens on (empty = all)")
	fs.IntVar(&c.WebhookPort, "webhook-port", 9443, "Port of the webhook server")
	fs.StringVar(&c.CertDir, "cert-dir", "/tmp/k8s-webhook-server/serving-certs", "Directory holding tls.crt and tls.key for the webhook server: the certificate Secret's volume mount, in both cert modes")
	fs.StringVar((*string)(&c.CertMode), "cert-mode", string(CertModeSelfSigned), "Where webhook certificates come from: self-signed (cert-controller) or external (mounted in --cert-dir)")
	fs.StringVar(&c.CertSecretName, "cert-secret-name", "jobset-addons-"+name+"-webhook-cert", "Secret where cert-controller keeps the self-signed certificates")
	fs.StringVar(&c.WebhookService, "webhook-service-name", "jobset-addons-"+name+"-webhook", "Service in front of the webhook server (the certificate's DNS name)")
	fs.StringVar(&c.WebhookConfigName, "webhook-configuration-name", "jobset-addons-"+name, "Name shared by the Mutating and ValidatingWebhookConfigurations whose CA is injected")
	fs.StringVar(&c.Namespace, "namespace", ns, "Namespace the controller runs in (defaults to $POD_NAMESPACE)")

	gates.AddFlag(fs)
}

func (c *Config) validate() error {
	switch c.CertMode {
	case CertModeSelfSigned, CertModeExternal:
	default:
		return fmt.Errorf("--cert-mode: %q is not one of %q, %q", c.CertMode, CertModeSelfSigned, CertModeExternal)
	}
	switch c.LogFormat {
	case "json", "console":
	default:
		return fmt.Errorf("--log-format: %q is not one of \"json\", \"console\"", c.LogFormat)
	}
	if c.ShutdownDelay < 0 {
		return fmt.Errorf("--shutdown-delay must not be negative")
	}
	if c.QPS <= 0 || c.Burst <= 0 {
		return fmt.Errorf("--kube-api-qps and --kube-api-burst must be positive")
	}
	if c.EventQPS <= 0 || c.EventBurst <= 0 {
		return fmt.Errorf("--event-qps and --event-burst must be positive")
	}
	if c.LeaderElect && c.LeaderElectionNamespace == "" {
		return fmt.Errorf("--leader-election-namespace must be set when --leader-elect is on")
	}
	return nil
}

// ControllerFlags are the flags every controller declares beside the shared runtime's, each
// with its own default: how many JobSets it reconciles at once, and the rate limit of its JobSet
// webhook's dry runs (NewDryRunClient).
type ControllerFlags struct {
	ConcurrentReconciles int
	WebhookQPS           float32
	WebhookBurst         int
}

// Bind registers --concurrent-reconciles (default concurrency; why, if not empty, says why that
// many), --webhook-api-qps (100) and --webhook-api-burst (200) on fs; dryRunsOf names what the
// JobSet webhook dry-runs ("PVC templates").
func (f *ControllerFlags) Bind(fs *pflag.FlagSet, concurrency int, why, dryRunsOf string) {
	help := "JobSets reconciled at once"
	if why != "" {
		help += " (" + why + ")"
	}
	fs.IntVar(&f.ConcurrentReconciles, "concurrent-reconciles", concurrency, help)
	fs.Float32Var(&f.WebhookQPS, "webhook-api-qps", 100, "Queries per second for the webhooks' calls: the JobSet webhook's dry runs of "+dryRunsOf+"; apart from --kube-api-qps, so that admission never waits behind the reconciler")
	fs.IntVar(&f.WebhookBurst, "webhook-api-burst", 200, "Burst for --webhook-api-qps")
}
