package testbed

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// PrometheusBinDir is the environment variable naming the directory of the prometheus and
// promtool binaries (bin/prometheus-<version>, set by the Makefile).
const PrometheusBinDir = "PROMETHEUS_BIN_DIR"

// PrometheusBin is the path of the tool name (prometheus, promtool) in $PROMETHEUS_BIN_DIR.
func PrometheusBin(name string) (string, error) {
	dir := os.Getenv(PrometheusBinDir)
	if dir == "" {
		return "", fmt.Errorf("$%s is not set: make e2e SUITE=observability builds Prometheus (make prometheus-bins) and sets it", PrometheusBinDir)
	}
	p := filepath.Join(dir, name)
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("%s: %w (make prometheus-bins)", p, err)
	}
	return p, nil
}

// PrometheusPort is the port of the Prometheus StartPrometheus runs: above the add-ons'.
func (c Config) PrometheusPort() int { return c.PortBase + 546 }

// StartPrometheus runs Prometheus as a process of the testbed: it scrapes each of the add-ons
// (their metrics ports on 127.0.0.1) every interval, as the job jobset-addons-<name>-metrics
// (the chart's ServiceMonitors' job names), evaluates the rule file rules every interval, and
// keeps its data under the testbed's work directory. It returns its URL once it is ready.
func StartPrometheus(ctx context.Context, c Config, addons []string, rules []byte, interval time.Duration) (string, error) {
	bin, err := PrometheusBin("prometheus")
	if err != nil {
		return "", err
	}
	dir := filepath.Join(c.WorkDir, "prometheus")
	if err := os.RemoveAll(dir); err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, "rules.yaml"), rules, 0o644); err != nil {
		return "", err
	}
	var cfg strings.Builder
	fmt.Fprintf(&cfg, "global:\n  scrape_interval: %s\n  evaluation_interval: %s\n  scrape_timeout: %s\n", interval, interval, interval)
	fmt.Fprintf(&cfg, "rule_files: [%q]\nscrape_configs:\n", filepath.Join(dir, "rules.yaml"))
	for _, a := range addons {
		fmt.Fprintf(&cfg, "  - job_name: jobset-addons-%s-metrics\n    static_configs: [{targets: [\"127.0.0.1:%d\"]}]\n", a, c.AddonPorts(a).Metrics)
	}
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yaml"), []byte(cfg.String()), 0o644); err != nil {
		return "", err
	}
	url := fmt.Sprintf("http://127.0.0.1:%d", c.PrometheusPort())
	logPath, err := StartProcess(c, "prometheus", bin,
		"--config.file="+filepath.Join(dir, "prometheus.yaml"),
		"--storage.tsdb.path="+filepath.Join(dir, "data"),
		fmt.Sprintf("--web.listen-address=127.0.0.1:%d", c.PrometheusPort()),
		"--log.level=warn")
	if err != nil {
		return "", err
	}
	if err := WaitHTTP(ctx, url+"/-/ready", time.Minute); err != nil {
		return "", errors.Join(fmt.Errorf("prometheus: %w; see %s", err, logPath), stopProcess(c, "prometheus"))
	}
	return url, nil
}

// StopPrometheus stops the Prometheus StartPrometheus started.
func StopPrometheus(c Config) error { return stopProcess(c, "prometheus") }
