// Package kindbed runs a kind cluster of real containers for the e2e suites that need them (make
// e2e-kind) and for DEMO_CLUSTER=kind make demo: the cluster is made through e2e-framework's
// kind support from a node image built here offline (make kind-image) or given by the user
// (KIND_NODE_IMAGE), then every image hack/kind/images.sh built is loaded into it, and JobSet,
// the gang scheduler, the DRA driver and the chart (all four add-ons) are installed.
//
// With a release (KIND_REGISTRY, KIND_CHART, KIND_CHART_VERSION: make release-check), the
// add-ons come from a registry on the host instead, as a user installs them: the node's
// containerd pulls from it (kind's local-registry guide: a hosts.toml for the registry's name),
// and the chart is installed from it by helm's OCI support; the add-on images are not loaded.
package kindbed

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"sigs.k8s.io/e2e-framework/support/kind"
	"sigs.k8s.io/e2e-framework/third_party/helm"

	"github.com/jobset-addons/jobset-addons/e2e/repo"
)

// Namespaces of what Up installs.
const (
	AddonsNamespace       = "jobset-addons-system"
	JobSetNamespace       = "jobset-system"
	CoschedulingNamespace = "scheduler-plugins"
	DRANamespace          = "dra-driver"
	// Release is the chart's Helm release name.
	Release = "jsa"
	// WorkloadImage is the image of test pods: busybox, never pulled.
	WorkloadImage = "kind.local/busybox:e2e"
	// RendezvousImage is e2e/kindbed/images/rendezvous: a distributed framework's first step.
	RendezvousImage = "kind.local/rendezvous:e2e"
	// CoreDNSImage is CoreDNS (tools/coredns), the cluster's DNS on the offline node image.
	CoreDNSImage = "kind.local/coredns:e2e"
	// DeviceClass is the DRA driver's DeviceClass (e2e/kindbed/images/dra-driver).
	DeviceClass = "gpu.e2e.jobset-addons.io"
	// CoschedulingSchedulerName is the in-cluster scheduler-plugins scheduler.
	CoschedulingSchedulerName = repo.CoschedulingSchedulerName
)

// Images loaded into every cluster after it is up (hack/kind/images.sh builds them).
var Images = append([]string{"kind.local/dra-driver:e2e", "kind.local/scheduler-plugins:e2e", WorkloadImage, RendezvousImage, CoreDNSImage, JobSetImage}, AddonImages...)

// AddonImages are the add-ons' images built here (hack/kind/values.yaml runs them).
var AddonImages = []string{
	"kind.local/volumeclaims:e2e", "kind.local/resourceclaims:e2e", "kind.local/sequencer:e2e", "kind.local/podgroups:e2e",
	"kind.local/barrier:e2e", // the sequencer's start barrier
}

// JobSetImage is the name JobSet v0.12.0's own manifests give its controller: the image ko
// builds from the module is loaded under it, so that the manifests install unchanged.
const JobSetImage = "us-central1-docker.pkg.dev/k8s-staging-images/jobset/jobset:v0.12.0"

// Config describes one kind cluster.
type Config struct {
	Root string // the repository
	Name string // kind cluster name
	// NodeImage is the kind node image: KIND_NODE_IMAGE, else the one make kind-image built
	// (its name is in bin/kind/node-image).
	NodeImage string
	// Binaries: kind, helm and kubectl.
	KindBin, HelmBin, KubectlBin string
	// JobSetSource and SchedulerPluginsSource are the module directories whose config/ hold
	// JobSet's manifests and scheduler-plugins' CRDs.
	JobSetSource, SchedulerPluginsSource string
	// TrainerSource is the module directory of Kubeflow Trainer (tools/trainer), whose
	// manifests InstallTrainer applies (TRAINER_SRC); empty, no case may install Trainer.
	TrainerSource string
	// WorkDir holds the kind config, the kubeconfig, the docker wrapper and the nodes' shared
	// volume directory.
	WorkDir string
	// Workers is the number of worker nodes beside the control plane (KIND_WORKERS, default 2).
	Workers int
	// KubeletVerbosity is the kubelets' log verbosity (KIND_KUBELET_VERBOSITY; 0: kind's
	// default), for reading what a kubelet did with a pod: journalctl -u kubelet on the node.
	KubeletVerbosity int
	// A release to install instead of the images built here (all empty: none). Registry is
	// the registry's name in the release's image references (localhost:PORT, served on the
	// host on every address); Chart the chart's oci:// reference, ChartVersion its version.
	Registry, Chart, ChartVersion string
}

// Release says the add-ons are installed from a registry (KIND_CHART), not loaded.
func (c Config) Release() bool { return c.Chart != "" }

// DefaultConfig reads the environment that make e2e-kind sets: KIND_CLUSTER_NAME,
// KIND_NODE_IMAGE, KIND, HELM, KUBECTL, JOBSET_SRC, SCHEDPLUGINS_SRC, TRAINER_SRC; and, for a release
// (make release-check), KIND_REGISTRY, KIND_CHART and KIND_CHART_VERSION.
func DefaultConfig() (Config, error) {
	root, err := repo.Root()
	if err != nil {
		return Config{}, err
	}
	c := Config{
		Root: root, Name: env("KIND_CLUSTER_NAME", "jobset-addons-e2e"),
		NodeImage: os.Getenv("KIND_NODE_IMAGE"),
		KindBin:   os.Getenv("KIND"), HelmBin: os.Getenv("HELM"), KubectlBin: os.Getenv("KUBECTL"),
		JobSetSource: os.Getenv("JOBSET_SRC"), SchedulerPluginsSource: os.Getenv("SCHEDPLUGINS_SRC"),
		TrainerSource: os.Getenv("TRAINER_SRC"),
		WorkDir:       filepath.Join(root, "bin", "kind"),
		Registry:      os.Getenv("KIND_REGISTRY"), Chart: os.Getenv("KIND_CHART"), ChartVersion: os.Getenv("KIND_CHART_VERSION"),
	}
	c.Workers = 2
	if v := os.Getenv("KIND_WORKERS"); v != "" {
		if c.Workers, err = strconv.Atoi(v); err != nil || c.Workers < 0 {
			return c, fmt.Errorf("KIND_WORKERS=%q: want a number of worker nodes", v)
		}
	}
	if v := os.Getenv("KIND_KUBELET_VERBOSITY"); v != "" {
		if c.KubeletVerbosity, err = strconv.Atoi(v); err != nil || c.KubeletVerbosity < 0 {
			return c, fmt.Errorf("KIND_KUBELET_VERBOSITY=%q: want a klog verbosity (0 to 10)", v)
		}
	}
	if (c.Registry == "") != (c.Chart == "") || (c.Chart == "") != (c.ChartVersion == "") {
		return c, errors.New("KIND_REGISTRY, KIND_CHART and KIND_CHART_VERSION go together (make release-check sets them)")
	}
	if c.NodeImage == "" {
		b, err := os.ReadFile(filepath.Join(c.WorkDir, "node-image"))
		if err != nil {
			return c, fmt.Errorf("no KIND_NODE_IMAGE and no image built by make kind-image: %w", err)
		}
		c.NodeImage = strings.TrimSpace(string(b))
	}
	for what, v := range map[string]string{"KIND": c.KindBin, "HELM": c.HelmBin, "KUBECTL": c.KubectlBin, "JOBSET_SRC": c.JobSetSource, "SCHEDPLUGINS_SRC": c.SchedulerPluginsSource} {
		if v == "" {
			return c, fmt.Errorf("%s is not set (make e2e-kind sets it)", what)
		}
		// e2e-framework would go install a kind of its own choosing when its path is missing.
		if _, err := os.Stat(v); err != nil {
			return c, fmt.Errorf("%s: %w", what, err)
		}
	}
	return c, nil
}

func env(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

// Offline says the node image is one make kind-image built: no CNI or CoreDNS of kind's own.
func (c Config) Offline() bool { return strings.HasPrefix(c.NodeImage, "jobset-addons/kind-node:") }

// Kubeconfig is the cluster's kubeconfig file.
func (c Config) Kubeconfig() string { return filepath.Join(c.WorkDir, c.Name+".kubeconfig") }

// Up makes the cluster (or reuses a running one of the same name), loads the images and
// installs everything; it returns once every add-on, JobSet, the gang scheduler and the DRA
// driver are ready.
func Up(ctx context.Context, c Config, log func(string, ...any)) (*kind.Cluster, error) {
	if err := os.MkdirAll(c.volumesDir(), 0o755); err != nil {
		return nil, err
	}
	host, err := probeHost(ctx, c)
	if err != nil {
		return nil, err
	}
	if host.wrapper != "" {
		log("docker run --privileged fails here (%s): kind runs through hack/kind/docker", host.privilegedErr)
		if err := os.Setenv("PATH", host.wrapper+string(os.PathListSeparator)+os.Getenv("PATH")); err != nil {
			return nil, err
		}
	}
	cfgFile := filepath.Join(c.WorkDir, c.Name+".yaml")
	if err := os.WriteFile(cfgFile, []byte(clusterConfig(c, host)), 0o644); err != nil {
		return nil, err
	}
	start := time.Now()
	cluster := kind.NewCluster(c.Name).WithPath(c.KindBin).WithOpts(kind.WithImage(c.NodeImage)).(*kind.Cluster)
	kc, err := cluster.CreateWithConfig(ctx, cfgFile)
	if err != nil {
		return nil, fmt.Errorf("kind create cluster %s from %s: %w", c.Name, c.NodeImage, err)
	}
	if err := copyFile(kc, c.Kubeconfig()); err != nil {
		return nil, err
	}
	log("kind cluster %s up in %s (node image %s)", c.Name, time.Since(start).Round(100*time.Millisecond), c.NodeImage)

	if c.Release() {
		gw, err := c.mirrorRegistry(ctx)
		if err != nil {
			return nil, err
		}
		log("the node pulls %s from the registry on the host, at %s", c.Registry, gw)
	}
	start = time.Now()
	// One kind load of every image: one archive (the layers the images share saved once),
	// imported into the nodes side by side, rather than one archive and one import per image
	// and node (e2e-framework's LoadImage).
	if _, err := c.run(ctx, nil, c.KindBin, append([]string{"load", "docker-image", "--name", c.Name}, c.images()...)...); err != nil {
		return nil, err
	}
	log("%d images loaded in %s", len(c.images()), time.Since(start).Round(100*time.Millisecond))

	if c.Offline() {
		start = time.Now()
		nodes, err := c.podNetwork(ctx)
		if err != nil {
			return nil, err
		}
		log("pod network across %d nodes in %s: %s", len(nodes), time.Since(start).Round(100*time.Millisecond), nodes)
	}

	start = time.Now()
	if err := install(ctx, c); err != nil {
		return nil, err
	}
	log("JobSet, coscheduling, the DRA driver and the chart installed and ready in %s", time.Since(start).Round(100*time.Millisecond))
	return cluster, nil
}

// images are the images Up loads: all of Images, but the add-ons' when they come from a release.
func (c Config) images() []string {
	if !c.Release() {
		return Images
	}
	var out []string
	for _, img := range Images {
		if !slices.Contains(AddonImages, img) {
			out = append(out, img)
		}
	}
	return out
}

// mirrorRegistry tells the node's containerd where c.Registry is: on the host, reached from the
// node at its default gateway (the kind network's), over plain HTTP. containerd reads
// certs.d/<name>/hosts.toml at each pull (config_path, set by clusterConfig), so nothing
// restarts. It returns the address the node pulls from.
func (c Config) mirrorRegistry(ctx context.Context) (string, error) {
	_, port, err := net.SplitHostPort(c.Registry)
	if err != nil {
		return "", fmt.Errorf("KIND_REGISTRY=%q: want localhost:PORT: %w", c.Registry, err)
	}
	route, err := c.Exec(ctx, c.Name+"-control-plane", "ip", "-4", "route", "show", "default")
	if err != nil {
		return "", err
	}
	f := strings.Fields(string(route)) // default via GATEWAY dev eth0 ...
	if len(f) < 3 || f[1] != "via" {
		return "", fmt.Errorf("the node has no default route to the host: %q", route)
	}
	addr := "http://" + net.JoinHostPort(f[2], port)
	hosts := fmt.Sprintf("server = %q\n\n[host.%q]\n  capabilities = [\"pull\", \"resolve\"]\n", "http://"+c.Registry, addr)
	dir := "/etc/containerd/certs.d/" + c.Registry
	nodes, err := c.NodeNames(ctx)
	if err != nil {
		return "", err
	}
	for _, n := range nodes {
		if _, err := c.run(ctx, []byte(hosts), "docker", "exec", "-i", n, "sh", "-c", "mkdir -p '"+dir+"' && cat >'"+dir+"/hosts.toml'"); err != nil {
			return "", err
		}
	}
	return addr, nil
}

// install puts JobSet, the gang scheduler, the DRA driver and the chart into the cluster and
// waits for each to be ready.
func install(ctx context.Context, c Config) error {
	jobset, err := c.run(ctx, nil, c.KubectlBin, "kustomize", filepath.Join(c.JobSetSource, "config", "default"))
	if err != nil {
		return err
	}
	if jobset, err = withJobSetGates(jobset); err != nil {
		return err
	}
	if _, err := c.Kubectl(ctx, jobset, "apply", "--server-side", "--force-conflicts", "-f", "-"); err != nil {
		return err
	}
	// The gang schedulers' CRDs (Volcano's too, though its scheduler does not run here:
	// podgroups serves both kinds, as on the testbed), before the chart: podgroups watches the
	// PodGroup kinds served when it starts.
	for _, crds := range []string{filepath.Join(c.SchedulerPluginsSource, "config", "crd", "bases"), filepath.Join(c.Root, "bin", "testbed", "volcano-crds")} {
		if _, err := c.Kubectl(ctx, nil, "apply", "--server-side", "--force-conflicts", "-f", crds); err != nil {
			return err
		}
	}
	waits := [][]string{
		{"-n", JobSetNamespace, "rollout", "status", "deploy/jobset-controller-manager"},
		{"-n", CoschedulingNamespace, "rollout", "status", "deploy/scheduler-plugins-scheduler"},
		{"-n", DRANamespace, "rollout", "status", "daemonset/dra-driver"},
	}
	if c.Offline() {
		if err := c.coreDNS(ctx); err != nil {
			return err
		}
		waits = append(waits, []string{"-n", "kube-system", "rollout", "status", "deploy/coredns"})
	}
	for _, m := range []string{"coscheduling.yaml", "dra-driver.yaml"} {
		if _, err := c.Kubectl(ctx, nil, "apply", "--server-side", "--force-conflicts", "-f", filepath.Join(c.Root, "e2e", "kindbed", "manifests", m)); err != nil {
			return err
		}
	}
	// upgrade --install: a kept cluster (E2E_KIND_KEEP) is brought to the chart as it is now.
	if err := c.HelmUpgrade(ctx, "--install"); err != nil {
		return err
	}
	for _, w := range waits {
		if _, err := c.Kubectl(ctx, nil, append(w, "--timeout=180s")...); err != nil {
			return err
		}
	}
	return c.waitAdmission(ctx)
}

// probeJobSet is a JobSet that reaches JobSet's webhooks and the sequencer's, created with
// --dry-run=server: nothing is stored.
const probeJobSet = `apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata: {name: kindbed-probe, namespace: default, annotations: {sequencer.jobset-addons.io/execution-policy: InOrder}}
spec:
  replicatedJobs:
  - name: a
    template: {spec: {template: {spec: {restartPolicy: Never, containers: [{name: c, image: kind.local/busybox:e2e}]}}}}
  - name: b
    template: {spec: {template: {spec: {restartPolicy: Never, containers: [{name: c, image: kind.local/busybox:e2e}]}}}}
`

// waitAdmission waits until a JobSet is admitted: a Deployment rolled out is not yet a webhook
// the API server reaches through its Service (endpoints, kube-proxy, JobSet's own certificate).
func (c Config) waitAdmission(ctx context.Context) error {
	return c.waitDryRun(ctx, "a JobSet is still not admitted 2m after the installs", probeJobSet, func(err error) bool { return err == nil })
}

// waitDryRun creates the object of manifest with --dry-run=server, every 500 ms for up to 2
// minutes, until done says the result (its error) is the one waited for.
func (c Config) waitDryRun(ctx context.Context, what, manifest string, done func(error) bool) error {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		_, err := c.Kubectl(ctx, []byte(manifest), "create", "--dry-run=server", "-f", "-")
		if done(err) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s (last: %v)", what, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// HelmUpgrade upgrades the release with the kind values (hack/kind/values.yaml: all four
// add-ons) and args ("--install" installs it when it is not), and waits for it.
func (c Config) HelmUpgrade(ctx context.Context, args ...string) error {
	return c.helm().RunUpgrade(c.helmOpts(ctx, args)...)
}

// HelmUninstall uninstalls the release and waits for its objects to go.
func (c Config) HelmUninstall(ctx context.Context) error {
	return c.helm().RunUninstall(helm.WithContext(ctx), helm.WithName(Release), helm.WithNamespace(AddonsNamespace),
		helm.WithArgs("--wait", "--timeout", "3m"))
}

func (c Config) helm() *helm.Manager { return helm.New(c.Kubeconfig()).WithPath(c.HelmBin) }

// helmOpts: the chart in this repository with the images loaded (hack/kind/values.yaml), or
// the release's chart from its registry, with its own images (hack/kind/values-release.yaml).
func (c Config) helmOpts(ctx context.Context, args []string) []helm.Option {
	chart := filepath.Join(c.Root, "charts", "jobset-addons")
	flags := []string{"--create-namespace", "-f", filepath.Join(c.Root, "hack", "kind", "values.yaml")}
	if c.Release() {
		chart = c.Chart
		flags = []string{"--create-namespace", "--version", c.ChartVersion, "--plain-http", "-f", filepath.Join(c.Root, "hack", "kind", "values-release.yaml")}
	}
	return []helm.Option{
		helm.WithContext(ctx), helm.WithName(Release), helm.WithNamespace(AddonsNamespace),
		helm.WithChart(chart), helm.WithWait(), helm.WithTimeout("5m"),
		helm.WithArgs(append(flags, args...)...),
	}
}

// Down deletes the cluster, and the docker network kind made when no other kind cluster uses
// it, then checks that no container, network or process of the cluster is left.
func Down(ctx context.Context, c Config, log func(string, ...any)) error {
	if _, err := exec.LookPath(c.KindBin); err != nil {
		return err
	}
	cluster := kind.NewCluster(c.Name).WithPath(c.KindBin).(*kind.Cluster)
	if err := cluster.Destroy(ctx); err != nil {
		return err
	}
	// The volumes the pods wrote, in the directory the nodes shared.
	if err := os.RemoveAll(c.volumesDir()); err != nil {
		return err
	}
	left, err := Leftovers(ctx, c)
	if err != nil {
		return err
	}
	if len(left) > 0 {
		return fmt.Errorf("kind cluster %s deleted, but left: %s", c.Name, strings.Join(left, "; "))
	}
	log("kind cluster %s deleted: no container, network or process of it left", c.Name)
	return nil
}

// Leftovers lists what of cluster c is still on this machine after its deletion: containers
// labelled with it, the kind network when no kind container remains, processes that name it.
func Leftovers(ctx context.Context, c Config) ([]string, error) {
	var left []string
	out, err := c.run(ctx, nil, "docker", "ps", "-a", "--filter", "label=io.x-k8s.kind.cluster="+c.Name, "--format", "{{.Names}}")
	if err != nil {
		return nil, err
	}
	if s := strings.TrimSpace(string(out)); s != "" {
		left = append(left, "containers "+strings.ReplaceAll(s, "\n", ", "))
	}
	others, err := c.run(ctx, nil, "docker", "ps", "-a", "--filter", "label=io.x-k8s.kind.cluster", "--format", "{{.Names}}")
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(string(others)) == "" {
		// The last kind cluster is gone: its network goes too.
		if nets, _ := c.run(ctx, nil, "docker", "network", "ls", "--filter", "name=^kind$", "-q"); strings.TrimSpace(string(nets)) != "" {
			if _, err := c.run(ctx, nil, "docker", "network", "rm", "kind"); err != nil {
				left = append(left, "docker network kind: "+err.Error())
			}
		}
	}
	ps, err := c.run(ctx, nil, "ps", "-eo", "pid,args")
	if err != nil {
		return nil, err
	}
	for _, l := range strings.Split(string(ps), "\n") {
		if strings.Contains(l, c.Name+"-control-plane") || strings.Contains(l, "kind-"+c.Name) {
			left = append(left, "process "+strings.TrimSpace(l))
		}
	}
	return left, nil
}

// host is what Up learned of this machine's Docker engine.
type host struct {
	cgroupV1      bool
	wrapper       string // a directory holding the docker wrapper, when --privileged fails
	privilegedErr string
}

func probeHost(ctx context.Context, c Config) (host, error) {
	var h host
	v, err := c.run(ctx, nil, "docker", "info", "--format", "{{.CgroupVersion}}")
	if err != nil {
		return h, fmt.Errorf("no Docker engine answers: %w", err)
	}
	h.cgroupV1 = strings.TrimSpace(string(v)) == "1"
	if _, err := c.run(ctx, nil, "docker", "image", "inspect", c.NodeImage); err != nil {
		return h, fmt.Errorf("node image %s is not in the Docker engine (make kind-image builds one): %w", c.NodeImage, err)
	}
	_, err = c.run(ctx, nil, "docker", "run", "--rm", "--privileged", "--entrypoint", "true", c.NodeImage)
	if err == nil {
		return h, nil
	}
	if !strings.Contains(err.Error(), "unable to apply caps") {
		return h, fmt.Errorf("docker run --privileged: %w", err)
	}
	h.privilegedErr = "unable to apply caps"
	h.wrapper = filepath.Join(c.WorkDir, "docker-wrapper")
	if err := os.MkdirAll(h.wrapper, 0o755); err != nil {
		return h, err
	}
	real, err := exec.LookPath("docker")
	if err != nil {
		return h, err
	}
	if err := os.Setenv("JSA_REAL_DOCKER", real); err != nil {
		return h, err
	}
	link := filepath.Join(h.wrapper, "docker")
	_ = os.Remove(link)
	return h, os.Symlink(filepath.Join(c.Root, "hack", "kind", "docker"), link)
}

// clusterConfig is kind's configuration for c on host h: a control plane and c.Workers workers,
// which share one host directory for the volumes of the controller-manager's hostpath provisioner
// (behind kind's default StorageClass, which kind turns on), so that a PVC's data follows its pod
// to any node, as on a network filesystem; resource.k8s.io/v1beta1 served; for the offline node
// image, no kindnetd and no CoreDNS (neither image exists here: podNetwork and coreDNS stand in);
// on a cgroup v1 host, Kubernetes' cgroup v1 refusal turned off; through the docker wrapper,
// containerd told not to lower oom_score_adj (that needs CAP_SYS_RESOURCE).
func clusterConfig(c Config, h host) string {
	var b strings.Builder
	b.WriteString("kind: Cluster\napiVersion: kind.x-k8s.io/v1alpha4\nnodes:\n")
	mounts := "  extraMounts:\n  - {hostPath: " + strconv.Quote(c.volumesDir()) + ", containerPath: " + hostPathVolumes + "}\n"
	b.WriteString("- role: control-plane\n" + mounts)
	for range c.Workers {
		b.WriteString("- role: worker\n" + mounts)
	}
	// The in-cluster coscheduling scheduler (scheduler-plugins v0.33.5, Kubernetes 1.33 code)
	// reads DRA objects as v1beta1, which Kubernetes 1.37 serves only when asked.
	b.WriteString("runtimeConfig:\n  resource.k8s.io/v1beta1: \"true\"\n")
	b.WriteString("networking:\n  podSubnet: " + PodSubnet + "\n")
	if c.Offline() {
		b.WriteString("  disableDefaultCNI: true\n")
	}
	if h.wrapper != "" || c.Release() {
		b.WriteString("containerdConfigPatches:\n")
	}
	if h.wrapper != "" {
		b.WriteString("- |-\n  [plugins.\"io.containerd.grpc.v1.cri\"]\n    restrict_oom_score_adj = true\n")
	}
	if c.Release() {
		// Registries are configured by hosts.toml files in this directory (mirrorRegistry).
		b.WriteString("- |-\n  [plugins.\"io.containerd.grpc.v1.cri\".registry]\n    config_path = \"/etc/containerd/certs.d\"\n")
	}
	var preflight, skip []string
	if c.Offline() {
		preflight = append(preflight, "ImagePull")
		skip = append(skip, "addon/coredns")
	}
	if h.cgroupV1 {
		preflight = append(preflight, "SystemVerification")
	}
	if len(preflight) > 0 || h.cgroupV1 || c.KubeletVerbosity > 0 {
		b.WriteString("kubeadmConfigPatches:\n")
	}
	if len(preflight) > 0 {
		b.WriteString("- |\n  kind: InitConfiguration\n  nodeRegistration:\n    ignorePreflightErrors: [" + strings.Join(preflight, ", ") + "]\n")
		if len(skip) > 0 {
			b.WriteString("  skipPhases: [" + strings.Join(skip, ", ") + "]\n")
		}
		b.WriteString("- |\n  kind: JoinConfiguration\n  nodeRegistration:\n    ignorePreflightErrors: [" + strings.Join(preflight, ", ") + "]\n")
	}
	if h.cgroupV1 || c.KubeletVerbosity > 0 {
		b.WriteString("- |\n  kind: KubeletConfiguration\n")
	}
	if h.cgroupV1 {
		b.WriteString("  failCgroupV1: false\n")
	}
	if c.KubeletVerbosity > 0 {
		fmt.Fprintf(&b, "  logging:\n    verbosity: %d\n", c.KubeletVerbosity)
	}
	return b.String()
}

// Kubectl runs kubectl against the cluster with stdin in, and returns its output.
func (c Config) Kubectl(ctx context.Context, in []byte, args ...string) ([]byte, error) {
	return c.run(ctx, in, c.KubectlBin, append([]string{"--kubeconfig", c.Kubeconfig()}, args...)...)
}

// Exec runs a command in the container of node (docker exec; a kind node's container has the
// Node's name), for what only the node sees: /proc of a container's process, its routes.
func (c Config) Exec(ctx context.Context, node string, args ...string) ([]byte, error) {
	return c.run(ctx, nil, "docker", append([]string{"exec", node}, args...)...)
}

// NodeNames are the cluster's nodes (their containers), as kind lists them.
func (c Config) NodeNames(ctx context.Context) ([]string, error) {
	out, err := c.run(ctx, nil, c.KindBin, "get", "nodes", "--name", c.Name)
	if err != nil {
		return nil, err
	}
	nodes := strings.Fields(string(out))
	slices.Sort(nodes)
	return nodes, nil
}

func (c Config) run(ctx context.Context, in []byte, name string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if in != nil {
		cmd.Stdin = bytes.NewReader(in)
	}
	if err := cmd.Run(); err != nil {
		return out.Bytes(), fmt.Errorf("%s %s: %w: %s", filepath.Base(name), strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return out.Bytes(), nil
}

func copyFile(from, to string) error {
	b, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	if len(b) == 0 {
		return errors.New("kind wrote an empty kubeconfig")
	}
	return os.WriteFile(to, b, 0o600)
}
