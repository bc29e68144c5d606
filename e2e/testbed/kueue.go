package testbed

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"
)

// Kueue runs beside JobSet on the testbed as a local process, as JobSet does: the kueue binary
// of the wrapper module tools/kueue (make kueue-bins links it as bin/testbed/kueue), its CRDs
// and webhook configurations read from its module source at start (bin/testbed/kueue-src names
// that directory), its webhooks on 127.0.0.1 with a certificate made here, and a Configuration
// written here.

// KueueNamespace is the namespace Kueue's Configuration names (Kueue keeps nothing there on the
// testbed: no leader election, no internal certificates).
const KueueNamespace = "kueue-system"

// KueueFrameworkJobSet is Kueue's name of its JobSet integration.
const KueueFrameworkJobSet = "jobset.x-k8s.io/jobset"

// The node labels of the testbed's topology, which StartKueue puts on the kwok nodes for
// Kueue's topology-aware scheduling (a Topology of these levels): all nodes in one block, two
// nodes a rack (node i in rack r<i/2>), and each node its own hostname.
const (
	TopologyBlockLabel = "testbed.jobset-addons.io/topology-block"
	TopologyRackLabel  = "testbed.jobset-addons.io/topology-rack"
	TopologyHostLabel  = corev1.LabelHostname
)

// KueueOptions say how Kueue runs.
type KueueOptions struct {
	// Frameworks are Kueue's integrations; empty means the JobSet integration alone. Kueue's
	// pod integration is not needed for JobSets (topology-aware scheduling included: Kueue puts
	// its gate on the JobSet's pod templates at admission and lifts it from the pods itself).
	Frameworks []string
	// FeatureGates are Kueue's feature gates, on top of the testbed's: VisibilityOnDemand off
	// (its API server would need a port and an APIService of its own).
	FeatureGates map[string]bool
	// DeviceClassMappings are Kueue's resources.deviceClassMappings: each logical resource (a
	// name a ClusterQueue gives a quota) and the DRA DeviceClasses counted as it. Kueue v0.18 and
	// later count, through them, the devices of ResourceClaimTemplates in a job's pod templates
	// (KueueDRAIntegration, on by default); v0.17.0 reads them with its DRA integration off.
	DeviceClassMappings map[string][]string
	// MultiKueue, when set, makes this Kueue a MultiKueue manager (its multiKueue section): origin
	// the testbed's name, the remote objects' garbage collected every 10 s (rather than every
	// minute), a lost worker given up after a minute. MultiKueue itself is on by default; the
	// worker clusters, their Secrets and the AdmissionCheck are the test's to make.
	MultiKueue bool
	// WaitForPodsReady, when set, is Kueue's waitForPodsReady section. Without it Kueue v0.19
	// runs waitForPodsReady as it ships (on: a 30-minute timeout, a requeue backoff from 60 s)
	// and v0.17.0 leaves it off.
	WaitForPodsReady *KueueWaitForPodsReady
}

// KueueWaitForPodsReady is Kueue's waitForPodsReady: an admitted workload whose pods are not all
// ready (or succeeded) within Timeout of its admission is evicted and requeued after a backoff
// of about BackoffBaseSeconds·2^(n-1) s; after BackoffLimitCount requeues (0: no limit) it is
// deactivated.
type KueueWaitForPodsReady struct {
	Timeout            time.Duration
	BackoffBaseSeconds int32
	BackoffLimitCount  int32
}

// config is the section of Kueue's Configuration.
func (w KueueWaitForPodsReady) config() map[string]any {
	rs := map[string]any{}
	if w.BackoffBaseSeconds > 0 {
		rs["backoffBaseSeconds"] = w.BackoffBaseSeconds
	}
	if w.BackoffLimitCount > 0 {
		rs["backoffLimitCount"] = w.BackoffLimitCount
	}
	return map[string]any{"timeout": w.Timeout.String(), "requeuingStrategy": rs}
}

// kueueConversionCRDs are the CRDs whose conversion Kueue's kustomization sends to its webhook
// (config/components/crd/kustomization.yaml): Kueue serves v1beta1 and v1beta2 of them.
var kueueConversionCRDs = []string{
	"localqueues.kueue.x-k8s.io", "clusterqueues.kueue.x-k8s.io", "cohorts.kueue.x-k8s.io",
	"workloads.kueue.x-k8s.io", "multikueueclusters.kueue.x-k8s.io",
}

// kueueMetricsCertDir is where Kueue (v0.17.0, v0.19.2) reads its metrics serving certificate when its
// internal certificate management is off: cmd/kueue/main.go hard-codes the path (the chart
// mounts a Secret there), and Kueue does not start without the files. The testbed writes its
// own certificate there, the one file it writes outside the repository and /tmp.
const kueueMetricsCertDir = "/etc/kueue/metrics/certs"

func (c Config) kueueDir() string { return filepath.Join(c.WorkDir, "kueue") }

// KueueVersion is the version of the Kueue in BinDir (the file kueue-version make writes).
func (c Config) KueueVersion() string {
	b, err := os.ReadFile(c.Bin("kueue-version"))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// kueueSrc is Kueue's module source, from the file kueue-src.
func (c Config) kueueSrc() (string, error) {
	b, err := os.ReadFile(c.Bin("kueue-src"))
	if err != nil {
		return "", fmt.Errorf("%s is missing: run `make kueue-bins` first", c.Bin("kueue-src"))
	}
	return strings.TrimSpace(string(b)), nil
}

// StartKueue installs Kueue's CRDs, labels the nodes with the testbed's topology, runs Kueue
// (unless it runs already) and registers its webhooks, and returns once they answer. StopKueue
// (or Down) stops it.
func StartKueue(ctx context.Context, c Config, o KueueOptions, log func(string, ...any)) error {
	if _, err := os.Stat(c.Bin("kueue")); err != nil {
		return fmt.Errorf("%s is missing: run `make kueue-bins` first", c.Bin("kueue"))
	}
	src, err := c.kueueSrc()
	if err != nil {
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
	p := c.Ports()
	dir := c.kueueDir()
	certDir := filepath.Join(dir, "certs")
	health := fmt.Sprintf("http://127.0.0.1:%d/readyz", p.KueueHealth)
	running := httpOK(ctx, health)
	if !running {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		if _, err := ServingCert(certDir); err != nil {
			return fmt.Errorf("making Kueue's webhook certificate: %w", err)
		}
		if err := writeKueueMetricsCert(certDir); err != nil {
			return err
		}
	}
	caPEM, err := os.ReadFile(filepath.Join(certDir, "ca.crt"))
	if err != nil {
		return err
	}
	base := fmt.Sprintf("https://127.0.0.1:%d", p.KueueWebhook)
	if err := installKueueCRDs(ctx, c, src, base, caPEM); err != nil {
		return err
	}
	if err := ensureNamespace(ctx, cs, KueueNamespace); err != nil {
		return err
	}
	if err := labelTopology(ctx, cs); err != nil {
		return err
	}
	frameworks := o.frameworks()
	if running {
		log("Kueue is already running")
	} else {
		if err := os.WriteFile(kueueConfigPath(c), kueueConfig(c, certDir, frameworks, o), 0o644); err != nil {
			return err
		}
		logPath, err := startKueueProcess(c)
		if err != nil {
			return err
		}
		if err := WaitHTTP(ctx, health, 90*time.Second); err != nil {
			return fmt.Errorf("Kueue: %w; see %s", err, logPath)
		}
		log("Kueue %s running: webhooks on 127.0.0.1:%d, integrations %s", c.KueueVersion(), p.KueueWebhook, strings.Join(frameworks, ", "))
	}
	manifests, err := kueueWebhooks(src, frameworks)
	if err != nil {
		return err
	}
	if err := RegisterWebhooks(ctx, cs, manifests, base, caPEM, WebhookEdits{Prefix: "kueue-"}); err != nil {
		return err
	}
	return waitKueueWebhooks(ctx, c)
}

// StartKueueAgain starts Kueue again after StopKueue, as a restart of its Deployment would:
// its webhook configurations registered again first (their server down until it starts, as
// while its pod restarts), then its process with the Configuration StartKueue wrote. It returns
// as the process starts, without waiting for it to be ready.
func StartKueueAgain(ctx context.Context, c Config, o KueueOptions) error {
	src, err := c.kueueSrc()
	if err != nil {
		return err
	}
	cs, err := c.Clientset()
	if err != nil {
		return err
	}
	caPEM, err := os.ReadFile(filepath.Join(c.kueueDir(), "certs", "ca.crt"))
	if err != nil {
		return fmt.Errorf("StartKueue first: %w", err)
	}
	manifests, err := kueueWebhooks(src, o.frameworks())
	if err != nil {
		return err
	}
	base := fmt.Sprintf("https://127.0.0.1:%d", c.Ports().KueueWebhook)
	if err := RegisterWebhooks(ctx, cs, manifests, base, caPEM, WebhookEdits{Prefix: "kueue-"}); err != nil {
		return err
	}
	_, err = startKueueProcess(c)
	return err
}

// frameworks are Kueue's integrations: the JobSet integration alone unless Frameworks says.
func (o KueueOptions) frameworks() []string {
	if len(o.Frameworks) == 0 {
		return []string{KueueFrameworkJobSet}
	}
	return o.Frameworks
}

func kueueConfigPath(c Config) string { return filepath.Join(c.kueueDir(), "config.yaml") }

func startKueueProcess(c Config) (logPath string, err error) {
	return StartProcess(c, "kueue", c.Bin("kueue"), "--config", kueueConfigPath(c), "--kubeconfig", c.Kubeconfig(), "--zap-log-level=2")
}

// StopKueue stops Kueue and removes its webhook configurations, so that nothing created later
// calls a webhook that is gone. Its CRDs and objects stay.
func StopKueue(ctx context.Context, c Config) error {
	return stopUnhooked(ctx, c, "kueue", func(cs kubernetes.Interface) error {
		src, err := c.kueueSrc()
		if err != nil {
			return err
		}
		manifests, err := kueueWebhooks(src, nil)
		if err != nil {
			return err
		}
		return deleteKueueWebhooks(ctx, cs, manifests)
	})
}

func deleteKueueWebhooks(ctx context.Context, cs kubernetes.Interface, manifests []byte) error {
	return eachWebhookConfiguration(manifests, func(m *admissionv1.MutatingWebhookConfiguration) error {
		return ignoreNotFound(cs.AdmissionregistrationV1().MutatingWebhookConfigurations().Delete(ctx, "kueue-"+m.Name, metav1.DeleteOptions{}))
	}, func(v *admissionv1.ValidatingWebhookConfiguration) error {
		return ignoreNotFound(cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(ctx, "kueue-"+v.Name, metav1.DeleteOptions{}))
	})
}

// kueueConfig is Kueue's Configuration on the testbed: no leader election, no internal
// certificates (the webhooks serve certDir's), every port on 127.0.0.1, and only the JobSets
// that name a LocalQueue are Kueue's (manageJobsWithoutQueueName false: the other suites'
// JobSets run as they would without Kueue).
func kueueConfig(c Config, certDir string, frameworks []string, o KueueOptions) []byte {
	p := c.Ports()
	fg := map[string]bool{"VisibilityOnDemand": false}
	for k, v := range o.FeatureGates {
		fg[k] = v
	}
	cfg := map[string]any{
		"apiVersion":                 "config.kueue.x-k8s.io/v1beta2",
		"kind":                       "Configuration",
		"namespace":                  KueueNamespace,
		"manageJobsWithoutQueueName": false,
		"internalCertManagement":     map[string]any{"enable": false},
		"webhook":                    map[string]any{"host": "127.0.0.1", "port": p.KueueWebhook, "certDir": certDir},
		"metrics":                    map[string]any{"bindAddress": fmt.Sprintf("127.0.0.1:%d", p.KueueMetrics)},
		"health":                     map[string]any{"healthProbeBindAddress": fmt.Sprintf("127.0.0.1:%d", p.KueueHealth)},
		"leaderElection":             map[string]any{"leaderElect": false},
		"clientConnection":           map[string]any{"qps": 200, "burst": 400},
		"integrations":               map[string]any{"frameworks": frameworks},
		"featureGates":               fg,
	}
	if len(o.DeviceClassMappings) > 0 {
		var mappings []any
		for _, name := range slices.Sorted(maps.Keys(o.DeviceClassMappings)) {
			mappings = append(mappings, map[string]any{"name": name, "deviceClassNames": o.DeviceClassMappings[name]})
		}
		cfg["resources"] = map[string]any{"deviceClassMappings": mappings}
	}
	if o.WaitForPodsReady != nil {
		cfg["waitForPodsReady"] = o.WaitForPodsReady.config()
	}
	if o.MultiKueue {
		cfg["multiKueue"] = map[string]any{"origin": c.Name, "gcInterval": "10s", "workerLostTimeout": "1m"}
	}
	b, err := yaml.Marshal(cfg)
	if err != nil {
		panic(err) // maps of strings, numbers and bools always marshal
	}
	return b
}

// writeKueueMetricsCert puts the testbed's certificate where Kueue reads its metrics
// certificate (kueueMetricsCertDir). Several testbeds share the path; any one's certificate
// serves them all (nothing here verifies Kueue's metrics certificate).
func writeKueueMetricsCert(certDir string) error {
	if err := os.MkdirAll(kueueMetricsCertDir, 0o755); err != nil {
		return fmt.Errorf("Kueue reads its metrics certificate from %s (hard-coded when its internal certificate management is off): %w", kueueMetricsCertDir, err)
	}
	for _, f := range []string{"tls.crt", "tls.key"} {
		if _, err := os.Stat(filepath.Join(kueueMetricsCertDir, f)); err == nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join(certDir, f))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(kueueMetricsCertDir, f), b, 0o600); err != nil {
			return err
		}
	}
	return nil
}

// installKueueCRDs applies Kueue's CRDs from its module source, with the conversion webhook its
// kustomization adds (calling base/convert with caPEM), and waits until they are served.
func installKueueCRDs(ctx context.Context, c Config, src, base string, caPEM []byte) error {
	files, err := filepath.Glob(filepath.Join(src, "config", "components", "crd", "bases", "*.yaml"))
	if err != nil || len(files) == 0 {
		return fmt.Errorf("no CRDs in %s/config/components/crd/bases: %v", src, err)
	}
	out := filepath.Join(c.kueueDir(), "crds")
	if err := os.RemoveAll(out); err != nil {
		return err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	var names []string
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		var crd map[string]any
		if err := yaml.Unmarshal(raw, &crd); err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		name, _, _ := unstructured.NestedString(crd, "metadata", "name")
		names = append(names, name)
		if slices.Contains(kueueConversionCRDs, name) {
			if err := unstructured.SetNestedField(crd, map[string]any{
				"strategy": "Webhook",
				"webhook": map[string]any{
					"clientConfig":             map[string]any{"url": base + "/convert", "caBundle": base64.StdEncoding.EncodeToString(caPEM)},
					"conversionReviewVersions": []any{"v1"},
				},
			}, "spec", "conversion"); err != nil {
				return err
			}
		}
		b, err := yaml.Marshal(crd)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(out, filepath.Base(f)), b, 0o644); err != nil {
			return err
		}
	}
	if err := run(ctx, c, "kubectl", "--kubeconfig", c.Kubeconfig(), "apply", "--server-side", "--force-conflicts", "-f", out); err != nil {
		return err
	}
	rc, err := c.RESTConfig()
	if err != nil {
		return err
	}
	for _, n := range names {
		if err := waitCRDEstablished(ctx, rc, n); err != nil {
			return err
		}
	}
	return nil
}

// kueueWebhooks are the webhook configurations of Kueue's module source
// (config/components/webhook/manifests.yaml) cut to the webhooks of Kueue's own kinds and of
// the integrations in frameworks: a webhook of an integration that is off would be registered
// with no server behind its path. frameworks nil keeps every webhook (to delete them all).
func kueueWebhooks(src string, frameworks []string) ([]byte, error) {
	raw, err := os.ReadFile(filepath.Join(src, "config", "components", "webhook", "manifests.yaml"))
	if err != nil {
		return nil, err
	}
	keep := func(rules []admissionv1.RuleWithOperations) bool {
		if frameworks == nil {
			return true
		}
		for _, r := range rules {
			for _, g := range r.APIGroups {
				switch {
				case g == "kueue.x-k8s.io":
					return true
				case g == "jobset.x-k8s.io" && slices.Contains(frameworks, KueueFrameworkJobSet):
					return true
				case g == "" && slices.Contains(frameworks, "pod") && slices.Contains(r.Resources, "pods"):
					return true
				}
			}
		}
		return false
	}
	var docs [][]byte
	err = eachWebhookConfiguration(raw, func(m *admissionv1.MutatingWebhookConfiguration) error {
		m.Webhooks = slices.DeleteFunc(m.Webhooks, func(w admissionv1.MutatingWebhook) bool { return !keep(w.Rules) })
		m.APIVersion, m.Kind = "admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration"
		b, err := yaml.Marshal(m)
		docs = append(docs, b)
		return err
	}, func(v *admissionv1.ValidatingWebhookConfiguration) error {
		v.Webhooks = slices.DeleteFunc(v.Webhooks, func(w admissionv1.ValidatingWebhook) bool { return !keep(w.Rules) })
		v.APIVersion, v.Kind = "admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration"
		b, err := yaml.Marshal(v)
		docs = append(docs, b)
		return err
	})
	return bytes.Join(docs, []byte("\n---\n")), err
}

// waitKueueWebhooks returns once the apiserver reaches Kueue's webhooks: a server-side dry run
// of a ResourceFlavor create passes through its mutating and validating webhooks.
func waitKueueWebhooks(ctx context.Context, c Config) error {
	rc, err := c.RESTConfig()
	if err != nil {
		return err
	}
	dc, err := dynamic.NewForConfig(rc)
	if err != nil {
		return err
	}
	rf := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor",
		"metadata": map[string]any{"name": "testbed-probe"},
	}}
	var last error
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, last = dc.Resource(KueueGVR("resourceflavors")).Create(ctx, rf, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return last == nil, nil
	})
	if err != nil {
		return fmt.Errorf("Kueue's webhooks do not answer: %w", errors.Join(err, last))
	}
	return nil
}

// KueueGVR is the resource of Kueue's API (kueue.x-k8s.io/v1beta2).
func KueueGVR(resource string) schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: "kueue.x-k8s.io", Version: "v1beta2", Resource: resource}
}

// labelTopology puts the testbed's topology labels on its kwok nodes (see TopologyRackLabel).
func labelTopology(ctx context.Context, cs kubernetes.Interface) error {
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: "type=kwok"})
	if err != nil {
		return err
	}
	slices.SortFunc(nodes.Items, func(a, b corev1.Node) int { return strings.Compare(a.Name, b.Name) })
	for i, n := range nodes.Items {
		patch := fmt.Sprintf(`{"metadata":{"labels":{%q:"b0",%q:"r%d"}}}`, TopologyBlockLabel, TopologyRackLabel, i/2)
		if _, err := cs.CoreV1().Nodes().Patch(ctx, n.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			return fmt.Errorf("labelling node %s: %w", n.Name, err)
		}
	}
	return nil
}
