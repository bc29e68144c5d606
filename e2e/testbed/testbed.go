// Package testbed runs a real Kubernetes control plane on this machine without Docker: etcd,
// kube-apiserver, kube-controller-manager (with the hostpath provisioner) and kube-scheduler
// built from Go modules, kwok's fake nodes whose pods run and complete, and the upstream JobSet
// controller with its webhooks. kwokctl (runtime "binary") runs the control plane; this package
// adds the nodes, the default StorageClass and JobSet.
package testbed

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/jobset-addons/jobset-addons/e2e/repo"
)

// Config describes one testbed.
type Config struct {
	// Root of the repository: binaries are read from Root/bin/testbed unless Bins is set.
	Root string
	// Bins, when set, is the directory of the testbed's binaries and manifests in place of
	// Root/bin/testbed: one that `make` links for another Kubernetes or JobSet version
	// (bin/testbed-<kube>-<jobset>, see `make e2e SUITE=compat`).
	Bins string
	// Name of the kwokctl cluster.
	Name string
	// WorkDir holds the kubeconfig, kwokctl's state, JobSet's certificates and logs.
	WorkDir string
	// Nodes is the number of fake nodes.
	Nodes int
	// PodDuration is how long a Job's pod runs before it succeeds, unless its annotation
	// pod-complete.stage.kwok.x-k8s.io/delay says otherwise.
	PodDuration time.Duration
	// PortBase: every port of the testbed is PortBase plus a fixed offset, on 127.0.0.1.
	PortBase int
	// APIServerGOGC, when set, is the kube-apiserver's GOGC. A benchmark timing one second of
	// work sets it high, so that whether one of the apiserver's garbage collections (a quarter
	// of such a window's CPU) falls into the window does not decide the result.
	APIServerGOGC string
	// KubeFeatureGates, when set, replaces WorkloadAPIFeatureGates on a testbed of Kubernetes
	// WorkloadAPISince or later: a test of what a cluster without one of them does (such as
	// DRAWorkloadResourceClaims) runs on a testbed started so.
	KubeFeatureGates string
	// KubeControllers, when set, is kube-controller-manager's --controllers: the benchmark of
	// the add-ons against their peers (make bench ADDON=peers) turns off the controllers that it
	// runs in a second kube-controller-manager of their own (StartControllerManager).
	KubeControllers string
}

// Ports of the testbed, all on 127.0.0.1.
type Ports struct {
	APIServer, Etcd, EtcdPeer, ControllerManager, Scheduler, Kwok, JobSetWebhook, JobSetHealth int
	// The gang schedulers (StartGangSchedulers).
	VolcanoMetrics, VolcanoHealth, CoschedulingSecure int
	// Volcano's controller-manager (StartVolcanoControllers).
	VolcanoControllersHealth int
	// Kueue (StartKueue).
	KueueWebhook, KueueHealth, KueueMetrics int
	// KAI Scheduler (StartKAI): its scheduler's metrics and plugin server, its binder's metrics
	// and probes, its pod grouper's metrics and probes (KAI's defaults clash: 8080, 8081).
	KAIMetrics, KAIPluginServer, KAIBinderMetrics, KAIBinderHealth, KAIGrouperMetrics, KAIGrouperHealth int
}

// Ports derives every port from PortBase: kwokctl hands out ports of its own for any it is
// not given, and can hand the same one to two components.
func (c Config) Ports() Ports {
	b := c.PortBase
	return Ports{
		APIServer: b + 443, Etcd: b + 379, EtcdPeer: b + 380, ControllerManager: b + 257,
		Scheduler: b + 259, Kwok: b + 247, JobSetWebhook: b + 450, JobSetHealth: b + 451,
		VolcanoMetrics: b + 460, VolcanoHealth: b + 461, CoschedulingSecure: b + 462, VolcanoControllersHealth: b + 463,
		KueueWebhook: b + 470, KueueHealth: b + 471, KueueMetrics: b + 472,
		KAIMetrics: b + 480, KAIPluginServer: b + 481, KAIBinderMetrics: b + 482, KAIBinderHealth: b + 483,
		KAIGrouperMetrics: b + 484, KAIGrouperHealth: b + 485,
	}
}

// All lists every port, for the check that teardown left none listening.
func (p Ports) All() []int {
	return []int{p.APIServer, p.Etcd, p.EtcdPeer, p.ControllerManager, p.Scheduler, p.Kwok, p.JobSetWebhook, p.JobSetHealth,
		p.VolcanoMetrics, p.VolcanoHealth, p.CoschedulingSecure, p.VolcanoControllersHealth, p.KueueWebhook, p.KueueHealth, p.KueueMetrics,
		p.KAIMetrics, p.KAIPluginServer, p.KAIBinderMetrics, p.KAIBinderHealth, p.KAIGrouperMetrics, p.KAIGrouperHealth}
}

// DefaultConfig reads the environment: TESTBED_NAME, TESTBED_DIR, TESTBED_BIN_DIR,
// TESTBED_NODES, TESTBED_POD_DURATION, TESTBED_PORT_BASE, TESTBED_APISERVER_GOGC,
// TESTBED_KUBE_FEATURE_GATES and TESTBED_KUBE_CONTROLLERS override the defaults.
func DefaultConfig() (Config, error) {
	root, err := repo.Root()
	if err != nil {
		return Config{}, err
	}
	c := Config{
		Root:        root,
		Name:        envOr("TESTBED_NAME", "jobset-addons"),
		WorkDir:     envOr("TESTBED_DIR", filepath.Join(root, ".testbed")),
		Bins:        os.Getenv("TESTBED_BIN_DIR"),
		Nodes:       4,
		PodDuration: time.Second,
		PortBase:    31000,

		APIServerGOGC:    os.Getenv("TESTBED_APISERVER_GOGC"),
		KubeFeatureGates: os.Getenv("TESTBED_KUBE_FEATURE_GATES"),
		KubeControllers:  os.Getenv("TESTBED_KUBE_CONTROLLERS"),
	}
	if c.Bins != "" && !filepath.IsAbs(c.Bins) {
		c.Bins = filepath.Join(root, c.Bins) // the suites run in their own directories
	}
	if v := os.Getenv("TESTBED_NODES"); v != "" {
		if c.Nodes, err = strconv.Atoi(v); err != nil || c.Nodes < 1 {
			return c, fmt.Errorf("TESTBED_NODES=%q: want a positive number", v)
		}
	}
	if v := os.Getenv("TESTBED_POD_DURATION"); v != "" {
		if c.PodDuration, err = time.ParseDuration(v); err != nil {
			return c, fmt.Errorf("TESTBED_POD_DURATION=%q: %w", v, err)
		}
	}
	if v := os.Getenv("TESTBED_PORT_BASE"); v != "" {
		if c.PortBase, err = strconv.Atoi(v); err != nil || c.PortBase < 1024 || c.PortBase > 65000 {
			return c, fmt.Errorf("TESTBED_PORT_BASE=%q: want a number in [1024, 65000]", v)
		}
	}
	return c, nil
}

// Beside is a second testbed on this machine beside c, for a test that needs two clusters at
// once (MultiKueue's manager and worker): c's binaries and settings, its own name, work
// directory (c's, suffixed with name) and ports (from portBase: a testbed listens on PortBase+247
// to PortBase+546 (Prometheus, StartPrometheus), so bases 400 apart do not overlap). Up, Down and everything else that takes a
// Config run it as they run c, from the same process.
func (c Config) Beside(name string, portBase int) Config {
	o := c
	o.Name = c.Name + "-" + name
	o.WorkDir = c.WorkDir + "-" + name
	o.PortBase = portBase
	return o
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

// BinDir is where `make testbed-bins` links every binary and manifest (Bins, when set).
func (c Config) BinDir() string {
	if c.Bins != "" {
		return c.Bins
	}
	return filepath.Join(c.Root, "bin", "testbed")
}

// Bin is the path of one testbed binary or manifest.
func (c Config) Bin(name string) string { return filepath.Join(c.BinDir(), name) }

// JobSetVersion is the version of the JobSet controller in BinDir, from the file jobset-version
// that make writes beside it, or "" when that file is missing (a bin/testbed linked before the
// file existed: JOBSET_VERSION of make/versions.mk).
func (c Config) JobSetVersion() string {
	b, err := os.ReadFile(c.Bin("jobset-version"))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// JobSetAtLeast says whether the JobSet controller in BinDir is min or later; an unknown
// version counts as the newest.
func (c Config) JobSetAtLeast(min string) bool {
	v := c.JobSetVersion()
	if v == "" {
		return true
	}
	have, err := version.ParseSemantic(v)
	return err != nil || have.AtLeast(version.MustParseSemantic(min))
}

// Kubeconfig is the path of the testbed's admin kubeconfig.
func (c Config) Kubeconfig() string { return filepath.Join(c.WorkDir, "kubeconfig") }

func (c Config) kwokDir() string   { return filepath.Join(c.WorkDir, "kwok") }
func (c Config) jobsetDir() string { return filepath.Join(c.WorkDir, "jobset") }

// RESTConfig loads the testbed's kubeconfig.
func (c Config) RESTConfig() (*rest.Config, error) {
	rc, err := clientcmd.BuildConfigFromFlags("", c.Kubeconfig())
	if err != nil {
		return nil, fmt.Errorf("loading %s: %w", c.Kubeconfig(), err)
	}
	rc.QPS, rc.Burst = -1, 0 // the testbed's apiserver has no limits either
	// The kubeconfig names kwokctl's PKI files, at the same paths for every testbed of this
	// work directory. client-go caches a transport by CA file path (and reloads that file only
	// later), so a process that talks to a second testbed (make e2e SUITE=compat) would verify it
	// with the first one's CA: the files' contents go into the config instead, which client-go keys
	// by.
	if err := rest.LoadTLSFiles(rc); err != nil {
		return nil, fmt.Errorf("loading %s: %w", c.Kubeconfig(), err)
	}
	rc.CAFile, rc.CertFile, rc.KeyFile = "", "", ""
	return rc, nil
}

// InlineKubeconfig is the testbed's admin kubeconfig with its certificates inline rather than
// named by path, as another cluster's controller needs it from a Secret (Kueue's
// MultiKueueCluster, which refuses file paths).
func (c Config) InlineKubeconfig() ([]byte, error) {
	rc, err := c.RESTConfig()
	if err != nil {
		return nil, err
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters[c.Name] = &clientcmdapi.Cluster{Server: rc.Host, CertificateAuthorityData: rc.CAData}
	kc.AuthInfos[c.Name] = &clientcmdapi.AuthInfo{ClientCertificateData: rc.CertData, ClientKeyData: rc.KeyData}
	kc.Contexts[c.Name] = &clientcmdapi.Context{Cluster: c.Name, AuthInfo: c.Name}
	kc.CurrentContext = c.Name
	return clientcmd.Write(*kc)
}

// Clientset is a clientset for the testbed's kubeconfig.
func (c Config) Clientset() (kubernetes.Interface, error) {
	rc, err := c.RESTConfig()
	if err != nil {
		return nil, err
	}
	return kubernetes.NewForConfig(rc)
}

// Up starts the testbed, or finishes starting one that is partly up, and returns once the
// nodes are Ready and JobSet's webhooks answer.
func Up(ctx context.Context, c Config, log func(string, ...any)) error {
	for _, b := range []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl", "etcd", "kwok", "kwokctl", "jobset", "helm", "jobset-crd.yaml", "jobset-webhooks.yaml"} {
		if _, err := os.Stat(c.Bin(b)); err != nil {
			return fmt.Errorf("%s is missing: run `make testbed-bins` first", c.Bin(b))
		}
	}
	if err := os.MkdirAll(c.WorkDir, 0o755); err != nil {
		return err
	}
	start := time.Now()
	if err := startCluster(ctx, c, log); err != nil {
		return err
	}
	rc, err := c.RESTConfig()
	if err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return err
	}
	if err := addNodes(ctx, cs, c.Nodes); err != nil {
		return err
	}
	if err := addStorageClass(ctx, cs); err != nil {
		return err
	}
	log("Control plane up in %s", time.Since(start).Round(time.Millisecond))
	if err := startJobSet(ctx, c, rc, log); err != nil {
		return err
	}
	if err := waitNodesReady(ctx, cs, c.Nodes); err != nil {
		return err
	}
	log("Testbed ready in %s: %d nodes Ready, JobSet webhooks answering", time.Since(start).Round(time.Millisecond), c.Nodes)
	return nil
}

// Down stops every process of the testbed and removes its state and its volumes' directories.
// It is safe to call on a testbed that is partly up or already down.
func Down(ctx context.Context, c Config, log func(string, ...any)) error {
	var errs []error
	removeHostPathVolumes(ctx, c, log)
	if err := stopProcesses(c); err != nil {
		errs = append(errs, err)
	}
	if err := stopCluster(ctx, c); err != nil {
		errs = append(errs, err)
	}
	if err := waitPortsFree(ctx, append(c.Ports().All(), c.TrainerPorts().All()...)); err != nil {
		errs = append(errs, err)
	}
	if left := Processes(c); len(left) > 0 {
		errs = append(errs, fmt.Errorf("testbed processes still running after teardown: %v", left))
	}
	if len(errs) == 0 {
		_ = os.RemoveAll(c.kwokDir())
		_ = os.RemoveAll(c.jobsetDir())
		_ = os.RemoveAll(c.kueueDir())
		_ = os.RemoveAll(c.trainerDir())
		_ = os.Remove(c.Kubeconfig())
		log("Testbed %s is down: no testbed process runs, no testbed port is listening", c.Name)
	}
	return errors.Join(errs...)
}

// run runs a testbed binary with kwokctl's environment, returning its combined output on error.
func run(ctx context.Context, c Config, name string, args ...string) error {
	cmd := exec.CommandContext(ctx, c.Bin(name), args...)
	cmd.Env = c.env()
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %w\n%s", name, strings.Join(args, " "), err, out)
	}
	return nil
}

// env puts bin/testbed first in PATH (kwokctl runs the first kubectl it finds) and keeps
// kwokctl's state inside the work directory.
func (c Config) env() []string {
	return append(os.Environ(),
		"PATH="+c.BinDir()+string(os.PathListSeparator)+os.Getenv("PATH"),
		"KWOK_WORKDIR="+c.kwokDir(),
	)
}
