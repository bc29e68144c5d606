package testbed

import (
	"context"
	"fmt"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	nodefast "sigs.k8s.io/kwok/kustomize/stage/node/fast"
	heartbeat "sigs.k8s.io/kwok/kustomize/stage/node/heartbeat-with-lease"
	podfast "sigs.k8s.io/kwok/kustomize/stage/pod/fast"
	"sigs.k8s.io/yaml"
)

// FailAnnotationKey on a Job's pod template makes its pods fail (exit code 1) instead of
// succeeding, after the same delay.
const FailAnnotationKey = "testbed.jobset-addons.io/fail"

// FailFirstAttemptAnnotationKey on a JobSet's pod template makes its pods fail in the JobSet's
// first attempt and succeed after a restart.
const FailFirstAttemptAnnotationKey = "testbed.jobset-addons.io/fail-first-attempt"

// DelayAnnotationKey is kwok's own: a duration ("30s") for which a Job's pod runs.
const DelayAnnotationKey = "pod-complete.stage.kwok.x-k8s.io/delay"

// The Workload API (scheduling.k8s.io/v1beta1 Workload and PodGroup, beta but off by default
// in Kubernetes 1.37), turned on in a testbed of Kubernetes WorkloadAPISince or later so that
// kube-scheduler gang-schedules pods naming a PodGroup (podgroups' scheduler kubernetes), with
// TopologyAwareWorkloadScheduling (alpha) for its topology key and DRAWorkloadResourceClaims
// (beta, off by default) for per-Job claims reserved for a Job's PodGroup, and CompositePodGroup
// (alpha, its kind in scheduling.k8s.io/v1alpha3) for composite gangs. Not WorkloadWithJob nor
// the other alpha gates, which podgroups does not use. Kubernetes 1.38 (KUBE_VERSION=v1.38.0-beta.0)
// takes the same gates, all beta and off by default there (TopologyAwareWorkloadScheduling and
// CompositePodGroup are beta from 1.38), and serves CompositePodGroup at v1beta1 too, which
// podgroups then writes.
const (
	WorkloadAPISince         = "1.37.0"
	WorkloadAPIFeatureGates  = "GenericWorkload=true,TopologyAwareWorkloadScheduling=true,DRAWorkloadResourceClaims=true,CompositePodGroup=true"
	WorkloadAPIRuntimeConfig = "scheduling.k8s.io/v1beta1=true,scheduling.k8s.io/v1alpha3=true"
)

// KubeAtLeast says whether the kube-apiserver in BinDir is min or later, from its --version.
func (c Config) KubeAtLeast(min string) (bool, error) {
	out, err := exec.Command(c.Bin("kube-apiserver"), "--version").Output()
	if err != nil {
		return false, fmt.Errorf("reading the version of %s: %w", c.Bin("kube-apiserver"), err)
	}
	// "Kubernetes v1.37.2"
	fields := strings.Fields(string(out))
	if len(fields) == 0 {
		return false, fmt.Errorf("%s --version printed nothing", c.Bin("kube-apiserver"))
	}
	have, err := version.ParseGeneric(fields[len(fields)-1])
	if err != nil {
		return false, fmt.Errorf("%s --version: %w", c.Bin("kube-apiserver"), err)
	}
	return have.AtLeast(version.MustParseGeneric(min)), nil
}

// kwokctlConfig is the configuration of the kwokctl cluster: every binary from bin/testbed,
// every port pinned on 127.0.0.1, the Workload API where the binaries have it, and kwok's
// stages with a pod run time.
func kwokctlConfig(c Config) ([]byte, error) {
	p := c.Ports()
	cfg := map[string]any{
		"apiVersion": "config.kwok.x-k8s.io/v1alpha1",
		"kind":       "KwokctlConfiguration",
		"options": map[string]any{
			"runtime":                     "binary",
			"bindAddress":                 "127.0.0.1",
			"kubeApiserverPort":           p.APIServer,
			"etcdPort":                    p.Etcd,
			"etcdPeerPort":                p.EtcdPeer,
			"kubeControllerManagerPort":   p.ControllerManager,
			"kubeSchedulerPort":           p.Scheduler,
			"kwokControllerPort":          p.Kwok,
			"disableQPSLimits":            true,
			"kubeAuthorization":           true,
			"kubeApiserverBinary":         c.Bin("kube-apiserver"),
			"kubeControllerManagerBinary": c.Bin("kube-controller-manager"),
			"kubeSchedulerBinary":         c.Bin("kube-scheduler"),
			"kubectlBinary":               c.Bin("kubectl"),
			"etcdBinary":                  c.Bin("etcd"),
			"kwokControllerBinary":        c.Bin("kwok"),
			"kubeAuditPolicy":             c.auditPolicyPath(),
		},
		// Without leader election: each runs once, and a Lease renewal that a starved apiserver
		// answers after the renew deadline would end it for good (kwokctl does not start it
		// again; on a 2-core machine shared with builds, make bench ADDON=scale lost kube-scheduler
		// so).
		"componentsPatches": []any{map[string]any{
			"name": "kube-controller-manager",
			"extraArgs": []any{
				map[string]any{"key": "enable-hostpath-provisioner", "value": "true"},
				map[string]any{"key": "leader-elect", "value": "false"},
			},
		}, map[string]any{
			"name":      "kube-scheduler",
			"extraArgs": []any{map[string]any{"key": "leader-elect", "value": "false"}},
		}},
	}
	if workload, err := c.KubeAtLeast(WorkloadAPISince); err != nil {
		return nil, err
	} else if workload {
		// kwokctl gives the gates to kube-apiserver, kube-controller-manager and kube-scheduler.
		opts := cfg["options"].(map[string]any)
		opts["kubeFeatureGates"] = WorkloadAPIFeatureGates
		if c.KubeFeatureGates != "" {
			opts["kubeFeatureGates"] = c.KubeFeatureGates
		}
		opts["kubeRuntimeConfig"] = WorkloadAPIRuntimeConfig
	}
	if c.KubeControllers != "" {
		kcm := cfg["componentsPatches"].([]any)[0].(map[string]any)
		kcm["extraArgs"] = append(kcm["extraArgs"].([]any), map[string]any{"key": "controllers", "value": c.KubeControllers})
	}
	if c.APIServerGOGC != "" {
		cfg["componentsPatches"] = append(cfg["componentsPatches"].([]any), map[string]any{
			"name":      "kube-apiserver",
			"extraEnvs": []any{map[string]any{"name": "GOGC", "value": c.APIServerGOGC}},
		})
	}
	stages, err := kwokStages(c.PodDuration)
	if err != nil {
		return nil, err
	}
	return yamlDocs(append([]any{cfg}, stages...))
}

// KwokStages is the YAML of the testbed's kwok stages, for a kwok that runs in a cluster of
// its own (make e2e-kind): so that pods there run, complete and fail as on the testbed.
func KwokStages(podDuration time.Duration) ([]byte, error) {
	stages, err := kwokStages(podDuration)
	if err != nil {
		return nil, err
	}
	return yamlDocs(stages)
}

func yamlDocs(docs []any) ([]byte, error) {
	var out []byte
	for _, d := range docs {
		b, err := yaml.Marshal(d)
		if err != nil {
			return nil, err
		}
		out = append(append(out, "---\n"...), b...)
	}
	return out, nil
}

// kwokStages are kwok's own fast stages and the start barrier's (barrierStages), but a Job's pod runs for podDuration (or its
// annotation's delay) before it completes. It fails instead (exit code 1) when
// FailAnnotationKey is "true", or when FailFirstAttemptAnnotationKey is "true" and the pod
// belongs to the JobSet's first attempt (restart-attempt 0), so that a restart succeeds.
func kwokStages(podDuration time.Duration) ([]any, error) {
	var stages []any
	for _, raw := range []string{nodefast.DefaultNodeInit, heartbeat.DefaultNodeHeartbeatWithLease, podfast.DefaultPodReady, podfast.DefaultPodDelete} {
		var s map[string]any
		if err := yaml.Unmarshal([]byte(raw), &s); err != nil {
			return nil, fmt.Errorf("kwok stage: %w", err)
		}
		if raw == podfast.DefaultPodReady {
			if err := holdAtBarrier(s); err != nil {
				return nil, err
			}
		}
		stages = append(stages, s)
	}
	stages = append(stages, barrierStages()...)
	annotation := func(key string) string { return `.metadata.annotations["` + key + `"]` }
	attempt := `.metadata.labels["jobset.sigs.k8s.io/restart-attempt"]`
	absent := func(key string) map[string]any { return map[string]any{"key": key, "operator": "DoesNotExist"} }
	in := func(key string, values ...any) map[string]any {
		return map[string]any{"key": key, "operator": "In", "values": values}
	}
	notIn := func(key string, values ...any) map[string]any {
		return map[string]any{"key": key, "operator": "NotIn", "values": values}
	}
	fail := map[string]string{"exitCode: 0": "exitCode: 1", "reason: Completed": "reason: Error", "phase: Succeeded": "phase: Failed"}
	for _, st := range []struct {
		name   string
		match  []any
		status map[string]string
	}{
		{"pod-complete", []any{absent(annotation(FailAnnotationKey)), absent(annotation(FailFirstAttemptAnnotationKey))}, nil},
		{"pod-complete-after-restart", []any{absent(annotation(FailAnnotationKey)), in(annotation(FailFirstAttemptAnnotationKey), "true"), notIn(attempt, "0")}, nil},
		{"pod-fail", []any{in(annotation(FailAnnotationKey), "true")}, fail},
		{"pod-fail-first-attempt", []any{absent(annotation(FailAnnotationKey)), in(annotation(FailFirstAttemptAnnotationKey), "true"), in(attempt, "0")}, fail},
	} {
		s, err := podCompleteStage(st.name, podDuration, st.match, st.status)
		if err != nil {
			return nil, err
		}
		stages = append(stages, s)
	}
	return stages, nil
}

// podCompleteStage is kwok's fast pod-complete stage, renamed, with more selector expressions,
// a delay, and replacements in its status template.
func podCompleteStage(name string, delay time.Duration, match []any, status map[string]string) (map[string]any, error) {
	var s map[string]any
	if err := yaml.Unmarshal([]byte(podfast.DefaultPodComplete), &s); err != nil {
		return nil, fmt.Errorf("kwok stage: %w", err)
	}
	s["metadata"] = map[string]any{"name": name}
	spec := s["spec"].(map[string]any)
	sel := spec["selector"].(map[string]any)
	sel["matchExpressions"] = append(sel["matchExpressions"].([]any), match...)
	spec["delay"] = map[string]any{
		"durationMilliseconds": delay.Milliseconds(),
		"durationFrom":         map[string]any{"expressionFrom": `.metadata.annotations["` + DelayAnnotationKey + `"]`},
	}
	next := spec["next"].(map[string]any)
	tmpl := next["statusTemplate"].(string)
	for from, to := range status {
		if !strings.Contains(tmpl, from) {
			return nil, fmt.Errorf("kwok's pod-complete stage changed: %q not found", from)
		}
		tmpl = strings.ReplaceAll(tmpl, from, to)
	}
	next["statusTemplate"] = tmpl
	return s, nil
}

func startCluster(ctx context.Context, c Config, log func(string, ...any)) error {
	if healthy(ctx, c) {
		log("Cluster %s is already running", c.Name)
		return nil
	}
	if _, err := os.Stat(filepath.Join(c.kwokDir(), "clusters", c.Name)); err == nil {
		log("Removing the stopped cluster %s", c.Name)
		if err := stopCluster(ctx, c); err != nil {
			return err
		}
	}
	for _, port := range c.Ports().All() {
		if !portFree(port) {
			return fmt.Errorf("port %d on 127.0.0.1 is in use: stop what holds it or set TESTBED_PORT_BASE", port)
		}
	}
	cfg, err := kwokctlConfig(c)
	if err != nil {
		return err
	}
	if err := os.WriteFile(c.auditPolicyPath(), []byte(auditPolicy), 0o644); err != nil {
		return err
	}
	cfgPath := filepath.Join(c.WorkDir, "kwokctl.yaml")
	if err := os.WriteFile(cfgPath, cfg, 0o644); err != nil {
		return err
	}
	return run(ctx, c, "kwokctl", "create", "cluster", "--name", c.Name, "--runtime", "binary",
		"--config", cfgPath, "--kubeconfig", c.Kubeconfig(), "--wait", "2m")
}

// auditPolicy has the apiserver log, at Metadata level, every request of the add-ons'
// ServiceAccounts, and nothing else: the record that proves no object was created twice
// (AuditCreates), and what each add-on costs the apiserver, by verb and resource (AuditRequests;
// make bench ADDON=scale). Metadata level holds no object, so that a line is about 1 KB.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: Metadata
  userGroups: ["system:serviceaccounts:` + AddonNamespace + `"]
- level: None
`

func (c Config) auditPolicyPath() string { return filepath.Join(c.WorkDir, "audit-policy.yaml") }

// AuditLog is the apiserver's audit log (see auditPolicy).
func (c Config) AuditLog() string {
	return filepath.Join(c.kwokDir(), "clusters", c.Name, "logs", "audit.log")
}

func stopCluster(ctx context.Context, c Config) error {
	if _, err := os.Stat(filepath.Join(c.kwokDir(), "clusters", c.Name)); err != nil {
		return nil
	}
	return run(ctx, c, "kwokctl", "delete", "cluster", "--name", c.Name, "--kubeconfig", c.Kubeconfig())
}

// healthy says whether the testbed's apiserver answers /readyz.
func healthy(ctx context.Context, c Config) bool {
	rc, err := c.RESTConfig()
	return err == nil && Ping(ctx, rc)
}

// Ping says whether the apiserver of rc answers /readyz within 2 s.
func Ping(ctx context.Context, rc *rest.Config) bool {
	rc = rest.CopyConfig(rc)
	rc.Timeout = 2 * time.Second
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return false
	}
	_, err = cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
	return err == nil
}

// addNodes creates the fake nodes kwok manages. Their allocatable is what the scheduler
// sees; kwok keeps it.
func addNodes(ctx context.Context, cs kubernetes.Interface, n int) error {
	for i := range n {
		name := fmt.Sprintf("kwok-node-%d", i)
		res := corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse("32"),
			corev1.ResourceMemory: resource.MustParse("256Gi"),
			corev1.ResourcePods:   resource.MustParse("110"),
		}
		if err := AddNode(ctx, cs, name, map[string]string{"type": "kwok"}, nil, res); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	return nil
}

// FitCluster gives the cluster of kubeconfig, where kwok runs in the cluster (make e2e-kind),
// what the suites expect of the testbed: n fake nodes, Ready, and the default StorageClass
// standard of the controller-manager's hostpath provisioner (which that controller-manager
// must enable).
func FitCluster(ctx context.Context, kubeconfig string, n int) error {
	rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return err
	}
	if err := addStorageClass(ctx, cs); err != nil {
		return err
	}
	if err := addNodes(ctx, cs, n); err != nil {
		return err
	}
	return waitNodesReady(ctx, cs, n)
}

// AddNode creates a fake node that kwok manages (and reports Ready), with the labels, taints
// and allocatable (also its capacity) given, and the well-known labels a kubelet sets on its
// node (hostname, os, arch: upstream JobSet's e2e selects nodes by kubernetes.io/os).
func AddNode(ctx context.Context, cs kubernetes.Interface, name string, labels map[string]string, taints []corev1.Taint, allocatable corev1.ResourceList) error {
	l := map[string]string{"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64"}
	maps.Copy(l, labels)
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Annotations: map[string]string{"kwok.x-k8s.io/node": "fake"},
			Labels:      l,
		},
		Spec:   corev1.NodeSpec{Taints: taints},
		Status: corev1.NodeStatus{Capacity: allocatable, Allocatable: allocatable},
	}
	if _, err := cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating node %s: %w", name, err)
	}
	return nil
}

// addStorageClass makes `standard` the default class, provisioned by the controller-manager's
// hostpath provisioner.
func addStorageClass(ctx context.Context, cs kubernetes.Interface) error {
	sc := &storagev1.StorageClass{
		ObjectMeta: metav1.ObjectMeta{
			Name:        "standard",
			Annotations: map[string]string{"storageclass.kubernetes.io/is-default-class": "true"},
		},
		Provisioner:       "kubernetes.io/host-path",
		ReclaimPolicy:     ptr.To(corev1.PersistentVolumeReclaimDelete),
		VolumeBindingMode: ptr.To(storagev1.VolumeBindingImmediate),
	}
	if _, err := cs.StorageV1().StorageClasses().Create(ctx, sc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating StorageClass standard: %w", err)
	}
	return nil
}

func waitNodesReady(ctx context.Context, cs kubernetes.Interface, n int) error {
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		ready := 0
		for _, node := range nodes.Items {
			for _, cond := range node.Status.Conditions {
				if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
					ready++
				}
			}
		}
		return ready >= n, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for %d Ready nodes: %w", n, err)
	}
	return nil
}

// removeHostPathVolumes deletes the directories of this cluster's hostpath volumes: the
// provisioner writes them under /tmp/hostpath_pv and nothing else removes them.
func removeHostPathVolumes(ctx context.Context, c Config, log func(string, ...any)) {
	if !healthy(ctx, c) {
		return
	}
	rc, err := c.RESTConfig()
	if err != nil {
		return
	}
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return
	}
	pvs, err := cs.CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return
	}
	for _, pv := range pvs.Items {
		if hp := pv.Spec.HostPath; hp != nil && strings.HasPrefix(filepath.Clean(hp.Path), "/tmp/hostpath_pv/") {
			if err := os.RemoveAll(hp.Path); err != nil {
				log("Could not remove %s: %v", hp.Path, err)
			}
		}
	}
}

func portFree(port int) bool {
	l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		return false
	}
	_ = l.Close()
	return true
}

func waitPortsFree(ctx context.Context, ports []int) error {
	var busy []int
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		busy = busy[:0]
		for _, p := range ports {
			if !portFree(p) {
				busy = append(busy, p)
			}
		}
		return len(busy) == 0, nil
	})
	if err != nil {
		return fmt.Errorf("ports still listening after teardown: %v", busy)
	}
	return nil
}

func ensureNamespace(ctx context.Context, cs kubernetes.Interface, name string) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s: %w", name, err)
	}
	return nil
}

// ControlPlaneBins are the testbed's Kubernetes binaries that ReplaceControlPlane replaces.
var ControlPlaneBins = []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl"}

// ReplaceControlPlane replaces the testbed's Kubernetes in place, as a control-plane upgrade
// does: it stops the cluster (etcd, kube-apiserver, kube-controller-manager, kube-scheduler and
// kwok), points ControlPlaneBins at those of bins (another testbed directory, such as
// bin/testbed-v1.38.0-beta.0) and starts the cluster again on the same etcd data, with the same
// flags, feature gates and ports. What runs beside it (JobSet, the add-ons, the gang schedulers)
// keeps running and reconnects. It returns once the apiserver answers again.
func (c Config) ReplaceControlPlane(ctx context.Context, bins string, log func(string, ...any)) error {
	start := time.Now()
	released, err := c.stopKwok(ctx)
	if err != nil {
		return err
	}
	if err := run(ctx, c, "kwokctl", "stop", "cluster", "--name", c.Name); err != nil {
		return err
	}
	dir := filepath.Join(c.kwokDir(), "clusters", c.Name, "bin")
	for _, name := range ControlPlaneBins {
		p := filepath.Join(dir, name)
		if err := os.Remove(p); os.IsNotExist(err) && name == "kubectl" {
			continue // kwokctl runs the kubectl of PATH (env), not one of its own
		} else if err != nil {
			return fmt.Errorf("replacing %s: %w", p, err)
		}
		if err := os.Symlink(filepath.Join(bins, name), p); err != nil {
			return err
		}
	}
	if err := run(ctx, c, "kwokctl", "start", "cluster", "--name", c.Name); err != nil {
		return err
	}
	deadline := time.Now().Add(2 * time.Minute)
	for !healthy(ctx, c) {
		if time.Now().After(deadline) {
			return fmt.Errorf("the apiserver of %s did not answer within 2m of its start", bins)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	log("Control plane replaced by %s's in %s, on the same etcd (kwok let go of %d node Leases first)", bins, time.Since(start).Round(time.Millisecond), released)
	return nil
}

// stopKwok stops the testbed's kwok alone, as kwokctl stop cluster does (the pid file kwokctl
// keeps), and deletes the node Leases it held, so that the kwok kwokctl start cluster starts
// plays the nodes and their pods at once. kwok holds a node's Lease under an identity of its
// own (hostname_uuid), new at each start, and plays a node only while it holds its Lease: the
// Leases of the stopped kwok (kwokctl's node-lease-duration-seconds, 200) would keep the new
// one off every node, its pods frozen, for minutes. A Lease another holder took (PartitionNode)
// stays. It returns how many Leases it deleted.
func (c Config) stopKwok(ctx context.Context) (int, error) {
	cs, err := c.Clientset()
	if err != nil {
		return 0, err
	}
	pidFile := filepath.Join(c.kwokDir(), "clusters", c.Name, "pids", "kwok-controller.pid")
	b, err := os.ReadFile(pidFile)
	if err != nil {
		return 0, fmt.Errorf("kwok's pid: %w", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0, fmt.Errorf("%s: %w", pidFile, err)
	}
	_ = syscall.Kill(pid, syscall.SIGTERM)
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return !alive(pid), nil
	}); err != nil {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	if err := os.Remove(pidFile); err != nil {
		return 0, err
	}
	host, err := os.Hostname()
	if err != nil {
		return 0, err
	}
	leases, err := cs.CoordinationV1().Leases(corev1.NamespaceNodeLease).List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, fmt.Errorf("listing node Leases: %w", err)
	}
	deleted := 0
	for _, l := range leases.Items {
		if h := ptr.Deref(l.Spec.HolderIdentity, ""); !strings.HasPrefix(h, host+"_") {
			continue
		}
		if err := cs.CoordinationV1().Leases(l.Namespace).Delete(ctx, l.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return deleted, fmt.Errorf("deleting the Lease of node %s: %w", l.Name, err)
		}
		deleted++
	}
	return deleted, nil
}
