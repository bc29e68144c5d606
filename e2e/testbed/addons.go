package testbed

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"k8s.io/client-go/kubernetes"
)

// Addons are the controllers of this repository, in the order their ports are given.
var Addons = []string{"volumeclaims", "resourceclaims", "sequencer", "podgroups"}

// AddonNamespace is where the add-ons keep their leases when they run on the testbed.
const AddonNamespace = "jobset-addons-system"

// AddonPorts of one add-on on the testbed.
type AddonPorts struct{ Webhook, Health, Metrics int }

// AddonPorts derives an add-on's ports from PortBase.
func (c Config) AddonPorts(name string) AddonPorts {
	i := slices.Index(Addons, name)
	b := c.PortBase + 500 + 10*i
	return AddonPorts{Webhook: b, Health: b + 1, Metrics: b + 2}
}

// StartAddon runs the add-on controller name (the binary bin/NAME) as a process of the testbed,
// as the ServiceAccount and with the RBAC the Helm chart renders for it, and registers its
// webhooks as the chart renders them, calling the process on 127.0.0.1 with a certificate made
// here. It returns once the controller is ready and, if probe
// is given, once probe passes (a request that shows the webhooks answer).
func StartAddon(ctx context.Context, c Config, name string, probe func(context.Context) error, extraArgs ...string) error {
	p, err := PrepareAddon(ctx, c, name, extraArgs...)
	if err != nil {
		return err
	}
	return p.Start(ctx, probe)
}

// PreparedAddon is an add-on whose certificate, chart render and kubeconfig are ready: StartAddon
// in two steps, so that a benchmark can time the process alone.
type PreparedAddon struct{ s *addonSetup }

// PrepareAddon does what StartAddon does before it starts the process.
func PrepareAddon(ctx context.Context, c Config, name string, extraArgs ...string) (*PreparedAddon, error) {
	s, err := c.prepareAddon(ctx, name, extraArgs)
	if err != nil {
		return nil, err
	}
	return &PreparedAddon{s}, nil
}

// Kubeconfig is the path of the kubeconfig the add-on runs with: its ServiceAccount's token.
func (p *PreparedAddon) Kubeconfig() string { return p.s.kubeconfig }

// Start starts the prepared add-on's process, waits until it is ready, registers its webhooks
// and waits for probe, as StartAddon.
func (p *PreparedAddon) Start(ctx context.Context, probe func(context.Context) error) error {
	ports := p.s.c.AddonPorts(p.s.name)
	if err := p.s.start(ctx, p.s.name, ports); err != nil {
		return err
	}
	return p.s.register(ctx, ports.Webhook, probe)
}

// addonSetup is what every process of one add-on shares: its certificate, its chart render,
// its kubeconfig (its ServiceAccount's) and its arguments.
type addonSetup struct {
	c          Config
	name       string
	dir        string
	caPEM      []byte
	manifests  []byte
	kubeconfig string
	args       []string
}

func (c Config) prepareAddon(ctx context.Context, name string, extraArgs []string) (*addonSetup, error) {
	s := &addonSetup{c: c, name: name, dir: filepath.Join(c.WorkDir, "addons", name), args: extraArgs}
	var err error
	if s.caPEM, err = ServingCert(filepath.Join(s.dir, "certs")); err != nil {
		return nil, err
	}
	cs, err := c.Clientset()
	if err != nil {
		return nil, err
	}
	if err := ensureNamespace(ctx, cs, AddonNamespace); err != nil {
		return nil, err
	}
	if s.manifests, err = c.chartWebhooks(ctx, name); err != nil {
		return nil, err
	}
	if s.kubeconfig, err = c.addonKubeconfig(ctx, cs, s.manifests, s.dir); err != nil {
		return nil, err
	}
	return s, nil
}

// start runs one process of the add-on, named proc, on ports p, and waits until it is ready.
func (s *addonSetup) start(ctx context.Context, proc string, p AddonPorts) error {
	args := append([]string{
		"--kubeconfig", s.kubeconfig,
		"--namespace", AddonNamespace, "--leader-election-namespace", AddonNamespace,
		"--cert-mode", "external", "--cert-dir", filepath.Join(s.dir, "certs"),
		"--webhook-host", "127.0.0.1", fmt.Sprintf("--webhook-port=%d", p.Webhook),
		fmt.Sprintf("--health-probe-bind-address=127.0.0.1:%d", p.Health),
		fmt.Sprintf("--metrics-bind-address=127.0.0.1:%d", p.Metrics),
		"--log-format", "console",
	}, s.args...)
	logPath, err := StartProcess(s.c, proc, filepath.Join(s.c.Root, "bin", s.name), args...)
	if err != nil {
		return err
	}
	if err := WaitHTTP(ctx, fmt.Sprintf("http://127.0.0.1:%d/readyz?verbose", p.Health), time.Minute); err != nil {
		// Not left running: a later start on the same ports would fail on them.
		_ = endProcess(s.c, proc, syscall.SIGKILL)
		return fmt.Errorf("%s: %w; see %s", proc, err, logPath)
	}
	return nil
}

// register registers the add-on's webhooks, calling 127.0.0.1:port, applies its admission
// policies, and waits for probe.
func (s *addonSetup) register(ctx context.Context, port int, probe func(context.Context) error) error {
	cs, err := s.c.Clientset()
	if err != nil {
		return err
	}
	if err := RegisterWebhooks(ctx, cs, s.manifests, fmt.Sprintf("https://127.0.0.1:%d", port), s.caPEM, WebhookEdits{}); err != nil {
		return err
	}
	if err := ApplyPolicies(ctx, cs, s.manifests); err != nil {
		return err
	}
	if probe == nil {
		return nil
	}
	var last error
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if last = probe(ctx); last == nil {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("%s's webhooks do not answer: %w", s.name, last)
}

// MaxReplicas is how many replicas of one add-on StartAddonReplicas can run.
const MaxReplicas = 2

// ReplicaPorts are the ports of replica r of the add-on name run by StartAddonReplicas: the
// ones after AddonPorts, within the ten ports of each add-on.
func (c Config) ReplicaPorts(name string, r int) AddonPorts {
	b := c.AddonPorts(name).Webhook + 3 + 3*r
	return AddonPorts{Webhook: b, Health: b + 1, Metrics: b + 2}
}

// AddonReplicas are the processes of one add-on run as a Deployment of several replicas would
// run: each its own process, all electing one leader through the same Lease, each serving the
// webhooks, with a Front in the place of the Service. The Front lives in the calling process.
type AddonReplicas struct {
	setup *addonSetup
	Name  string
	N     int
	Front *Front
}

// StartAddonReplicas runs n (at most MaxReplicas) replicas of the add-on name, with its webhooks
// registered as StartAddon does but calling a Front on the add-on's webhook port that forwards to
// any live replica. Replica r is the process NAME-r.
func StartAddonReplicas(ctx context.Context, c Config, name string, n int, probe func(context.Context) error, extraArgs ...string) (*AddonReplicas, error) {
	if n < 1 || n > MaxReplicas {
		return nil, fmt.Errorf("%d replicas: want 1 to %d", n, MaxReplicas)
	}
	s, err := c.prepareAddon(ctx, name, extraArgs)
	if err != nil {
		return nil, err
	}
	a := &AddonReplicas{setup: s, Name: name, N: n}
	var backends []string
	for r := range n {
		backends = append(backends, fmt.Sprintf("127.0.0.1:%d", c.ReplicaPorts(name, r).Webhook))
		if err := a.Start(ctx, r); err != nil {
			return nil, err
		}
	}
	if a.Front, err = NewFront(fmt.Sprintf("127.0.0.1:%d", c.AddonPorts(name).Webhook), backends...); err != nil {
		return nil, err
	}
	return a, s.register(ctx, c.AddonPorts(name).Webhook, probe)
}

// Proc is the process name of replica r.
func (a *AddonReplicas) Proc(r int) string { return fmt.Sprintf("%s-%d", a.Name, r) }

// Start (re)starts replica r and waits until it is ready.
func (a *AddonReplicas) Start(ctx context.Context, r int) error {
	return a.setup.start(ctx, a.Proc(r), a.setup.c.ReplicaPorts(a.Name, r))
}

// Kill kills replica r with SIGKILL.
func (a *AddonReplicas) Kill(r int) error { return endProcess(a.setup.c, a.Proc(r), syscall.SIGKILL) }

// Leader is the replica that holds the lease, from each one's leader_election_master_status.
func (a *AddonReplicas) Leader(ctx context.Context) (int, bool) {
	for r := range a.N {
		url := fmt.Sprintf("http://127.0.0.1:%d/metrics", a.setup.c.ReplicaPorts(a.Name, r).Metrics)
		if v, err := ScrapeGauge(ctx, url, "leader_election_master_status"); err == nil && v == 1 {
			return r, true
		}
	}
	return 0, false
}

// Stop stops every replica and the Front, and removes the webhook configurations.
func (a *AddonReplicas) Stop(ctx context.Context) error {
	var errs []error
	for r := range a.N {
		errs = append(errs, stopProcess(a.setup.c, a.Proc(r)))
	}
	if a.Front != nil {
		a.Front.Close()
	}
	if healthy(ctx, a.setup.c) {
		if cs, err := a.setup.c.Clientset(); err != nil {
			errs = append(errs, err)
		} else {
			errs = append(errs, DeleteWebhooks(ctx, cs, a.setup.manifests), DeletePolicies(ctx, cs, a.setup.manifests))
		}
	}
	return errors.Join(errs...)
}

// StopAddon stops the add-on and removes its webhook configurations, if the cluster still runs.
func StopAddon(ctx context.Context, c Config, name string) error {
	return stopUnhooked(ctx, c, name, func(cs kubernetes.Interface) error {
		manifests, err := c.chartWebhooks(ctx, name)
		if err != nil {
			return err
		}
		return errors.Join(DeleteWebhooks(ctx, cs, manifests), DeletePolicies(ctx, cs, manifests))
	})
}

// stopUnhooked stops process name, then, if the cluster still runs, calls unhook to remove
// the process's webhook configurations, so that nothing created later calls a webhook that is
// gone.
func stopUnhooked(ctx context.Context, c Config, name string, unhook func(kubernetes.Interface) error) error {
	if err := stopProcess(c, name); err != nil {
		return err
	}
	if !healthy(ctx, c) {
		return nil
	}
	cs, err := c.Clientset()
	if err != nil {
		return err
	}
	return unhook(cs)
}

// KillAddon kills the add-on with SIGKILL, as a node failure or an OOM kill would: it gets no
// chance to clean up, and its webhook configurations stay registered. StartAddon brings it back.
func KillAddon(c Config, name string) error {
	return endProcess(c, name, syscall.SIGKILL)
}

// chartWebhooks renders the chart with only the add-on name on, for its webhook configurations
// and its RBAC.
func (c Config) chartWebhooks(ctx context.Context, name string) ([]byte, error) {
	// The whole render: only its webhook configurations are used (--show-only fails on a
	// template that renders nothing).
	return RenderChart(ctx, c, name)
}

// ScrapeGauge is the value of the first sample of metric (a name without labels, or with its
// labels) in the Prometheus text served at url.
func ScrapeGauge(ctx context.Context, url, metric string) (float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	for _, v := range Samples(string(body), metric) {
		return v, nil
	}
	return 0, fmt.Errorf("%s serves no %s", url, metric)
}

// MetricSum is the sum of the samples of metric in the Prometheus text body whose labels
// contain each of labels (`name="value"`); 0 when there is none.
func MetricSum(body, metric string, labels ...string) float64 {
	sum := 0.0
	for line, v := range Samples(body, metric) {
		if !slices.ContainsFunc(labels, func(l string) bool { return !strings.Contains(line, l) }) {
			sum += v
		}
	}
	return sum
}

// Samples yields each sample of metric in the Prometheus text body: its line (name, labels and
// value) and its value.
func Samples(body, metric string) iter.Seq2[string, float64] {
	return func(yield func(string, float64) bool) {
		for line := range strings.SplitSeq(body, "\n") {
			if !strings.HasPrefix(line, metric+" ") && !strings.HasPrefix(line, metric+"{") {
				continue
			}
			v, err := strconv.ParseFloat(line[strings.LastIndex(line, " ")+1:], 64)
			if err == nil && !yield(line, v) {
				return
			}
		}
	}
}
