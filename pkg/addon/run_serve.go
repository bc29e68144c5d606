package addon

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"github.com/open-policy-agent/cert-controller/pkg/rotator"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
)

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
