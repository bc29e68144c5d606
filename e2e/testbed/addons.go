package testbed

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"time"
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
	dir := filepath.Join(c.WorkDir, "addons", name)
	caPEM, err := ServingCert(filepath.Join(dir, "certs"))
	if err != nil {
		return err
	}
	cs, err := c.Clientset()
	if err != nil {
		return err
	}
	if err := ensureNamespace(ctx, cs, AddonNamespace); err != nil {
		return err
	}
	manifests, err := c.chartWebhooks(ctx, name)
	if err != nil {
		return err
	}
	kubeconfig, err := c.addonKubeconfig(ctx, cs, manifests, dir)
	if err != nil {
		return err
	}
	p := c.AddonPorts(name)
	args := append([]string{
		"--kubeconfig", kubeconfig,
		"--namespace", AddonNamespace, "--leader-election-namespace", AddonNamespace,
		"--cert-mode", "external", "--cert-dir", filepath.Join(dir, "certs"),
		"--webhook-host", "127.0.0.1", fmt.Sprintf("--webhook-port=%d", p.Webhook),
		fmt.Sprintf("--health-probe-bind-address=127.0.0.1:%d", p.Health),
		fmt.Sprintf("--metrics-bind-address=127.0.0.1:%d", p.Metrics),
		"--log-format", "console",
	}, extraArgs...)
	logPath, err := StartProcess(c, name, filepath.Join(c.Root, "bin", name), args...)
	if err != nil {
		return err
	}
	if err := WaitHTTP(ctx, fmt.Sprintf("http://127.0.0.1:%d/readyz", p.Health), time.Minute); err != nil {
		return fmt.Errorf("%s: %w; see %s", name, err, logPath)
	}
	if err := RegisterWebhooks(ctx, cs, manifests, fmt.Sprintf("https://127.0.0.1:%d", p.Webhook), caPEM, WebhookEdits{}); err != nil {
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
	return fmt.Errorf("%s's webhooks do not answer: %w", name, last)
}

// StopAddon stops the add-on and removes its webhook configurations, if the cluster still runs.
func StopAddon(ctx context.Context, c Config, name string) error {
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
	manifests, err := c.chartWebhooks(ctx, name)
	if err != nil {
		return err
	}
	return DeleteWebhooks(ctx, cs, manifests)
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
	args := []string{"template", "jsa", filepath.Join(c.Root, "charts", "jobset-addons"), "--namespace", AddonNamespace}
	for _, a := range Addons {
		args = append(args, "--set", fmt.Sprintf("%s.enabled=%t", a, a == name))
	}
	cmd := exec.CommandContext(ctx, c.Bin("helm"), args...)
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+filepath.Join(c.WorkDir, "helm"), "HELM_CONFIG_HOME="+filepath.Join(c.WorkDir, "helm"), "HELM_DATA_HOME="+filepath.Join(c.WorkDir, "helm"))
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("rendering the chart's webhooks for %s: %w", name, err)
	}
	return out, nil
}
