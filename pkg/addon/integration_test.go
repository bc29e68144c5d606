package addon

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/component-base/featuregate"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/yaml"

	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// TestRunOnAPIServer starts the runtime against a real apiserver and etcd (envtest, on the
// testbed's binaries) with self-signed webhook certificates, leader election and a gate, as the
// volumeclaims ServiceAccount with exactly the RBAC the chart renders for it: so the chart's
// Secret, Lease and webhook-configuration rules (each by resourceNames) are proven enough.
func TestRunOnAPIServer(t *testing.T) {
	rc := startAPIServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	c, err := client.New(rc, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	const (
		ns      = "jobset-addons-system"
		cfgName = "jobset-addons-volumeclaims"
		secret  = "jobset-addons-volumeclaims-webhook-cert"
		lease   = "volumeclaims.jobset-addons.io"
		account = "jobset-addons-volumeclaims"
	)
	hook := func(name string) (admissionv1.WebhookClientConfig, []admissionv1.RuleWithOperations) {
		return admissionv1.WebhookClientConfig{Service: &admissionv1.ServiceReference{Namespace: ns, Name: "svc", Path: ptr.To("/" + name)}},
			[]admissionv1.RuleWithOperations{{Operations: []admissionv1.OperationType{admissionv1.Create},
				Rule: admissionv1.Rule{APIGroups: []string{"example.com"}, APIVersions: []string{"v1"}, Resources: []string{"nothings"}}}}
	}
	mcc, mrules := hook("mutate")
	vcc, vrules := hook("validate")
	for _, o := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		// The chart renders this Secret empty; cert-controller fills it.
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: secret}},
		// Another add-on's Secret in the same namespace: out of this one's reach.
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "jobset-addons-podgroups-webhook-cert"}},
		&admissionv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: cfgName}, Webhooks: []admissionv1.MutatingWebhook{{
			Name: "m.test.jobset-addons.io", ClientConfig: mcc, Rules: mrules, SideEffects: ptr.To(admissionv1.SideEffectClassNone), AdmissionReviewVersions: []string{"v1"},
		}}},
		&admissionv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: cfgName}, Webhooks: []admissionv1.ValidatingWebhook{{
			Name: "v.test.jobset-addons.io", ClientConfig: vcc, Rules: vrules, SideEffects: ptr.To(admissionv1.SideEffectClassNone), AdmissionReviewVersions: []string{"v1"},
		}}},
	} {
		if err := c.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	applyChartRBAC(ctx, t, c, "volumeclaims")
	asAddon := rest.CopyConfig(rc)
	asAddon.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + ns + ":" + account}
	addonClient, err := client.New(asAddon, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := addonClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "jobset-addons-podgroups-webhook-cert"}, &corev1.Secret{}); !apierrors.IsForbidden(err) {
		t.Errorf("the add-on reading another add-on's Secret: err %v, want Forbidden", err)
	}

	// Two PVCs, one managed by the add-on: the scoped cache must hold only that one.
	for name, lbls := range map[string]map[string]string{
		"managed":   {contract.ManagedByLabelKey: "test.jobset-addons.io"},
		"unrelated": nil,
	} {
		if err := c.Create(ctx, &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: lbls},
			Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}); err != nil {
			t.Fatal(err)
		}
	}

	health, webhookPort := freePort(t), freePort(t)
	setupGates := make(chan bool, 1)
	cached := make(chan []string, 1)
	opts := Options{
		Name:               "volumeclaims",
		MutatingWebhooks:   true,
		ValidatingWebhooks: true,
		FeatureGates:       map[featuregate.Feature]featuregate.FeatureSpec{"PartOne": {Default: false, PreRelease: featuregate.Alpha}},
		// Widget is served by no API: an optional CRD that is not installed must not stop the
		// manager (servedOnly drops it), or podgroups could not start without both PodGroup CRDs.
		Cache: map[client.Object]cache.ByObject{&corev1.PersistentVolumeClaim{}: ManagedBy("test.jobset-addons.io"), unservedWidget(): {}},
		Setup: func(ctx context.Context, mgr ctrl.Manager, gates featuregate.FeatureGate) error {
			// Setup runs before the manager starts: the cache is read by a runnable, once started.
			if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
				var pvcs corev1.PersistentVolumeClaimList
				if err := mgr.GetCache().List(ctx, &pvcs, client.InNamespace(ns)); err != nil {
					return err
				}
				var names []string
				for _, pvc := range pvcs.Items {
					names = append(names, pvc.Name)
				}
				cached <- names
				return nil
			})); err != nil {
				return err
			}
			mgr.GetWebhookServer().Register("/ping", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "pong") }))
			setupGates <- gates.Enabled("PartOne")
			return nil
		},
	}
	certDir := t.TempDir()
	args := []string{
		"--namespace", ns, "--leader-election-namespace", ns,
		"--health-probe-bind-address", fmt.Sprintf("127.0.0.1:%d", health),
		"--metrics-bind-address", "0",
		"--webhook-host", "127.0.0.1", "--webhook-port", fmt.Sprint(webhookPort),
		"--cert-dir", certDir,
		"--feature-gates", "PartOne=true",
		"--shutdown-delay", "2s",
	}
	go mountSecret(ctx, c, client.ObjectKey{Namespace: ns, Name: secret}, certDir)
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- Run(runCtx, opts, args, asAddon) }()

	select {
	case enabled := <-setupGates:
		if !enabled {
			t.Error("Setup saw PartOne disabled, want enabled by --feature-gates")
		}
	case err := <-done:
		t.Fatalf("Run returned before Setup: %v", err)
	case <-ctx.Done():
		t.Fatal("Setup never ran")
	}

	if got := <-cached; len(got) != 1 || got[0] != "managed" {
		t.Errorf("PVCs in the scoped cache = %v, want only [managed]", got)
	}

	// Setup does not wait for the certificate; the rotator writes it meanwhile.
	var sec corev1.Secret
	poll(ctx, t, "certificate secret with ca.crt", func() bool {
		return c.Get(ctx, client.ObjectKey{Namespace: ns, Name: secret}, &sec) == nil && len(sec.Data["ca.crt"]) > 0
	})
	ca := sec.Data["ca.crt"]
	poll(ctx, t, "CA injected into both webhook configurations", func() bool {
		var m admissionv1.MutatingWebhookConfiguration
		var v admissionv1.ValidatingWebhookConfiguration
		return c.Get(ctx, client.ObjectKey{Name: cfgName}, &m) == nil && c.Get(ctx, client.ObjectKey{Name: cfgName}, &v) == nil &&
			string(m.Webhooks[0].ClientConfig.CABundle) == string(ca) && string(v.Webhooks[0].ClientConfig.CABundle) == string(ca)
	})
	poll(ctx, t, "/readyz 200", func() bool {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/readyz", health))
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})

	// The webhook server presents a certificate for the Service's DNS name, signed by the CA,
	// over TLS 1.2 or newer only.
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	tlsFor := func(max uint16) *tls.Config {
		return &tls.Config{RootCAs: pool, ServerName: "jobset-addons-volumeclaims-webhook." + ns + ".svc", MinVersion: tls.VersionTLS10, MaxVersion: max}
	}
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: tlsFor(tls.VersionTLS12)}}
	poll(ctx, t, "webhook server answers over TLS 1.2", func() bool {
		resp, err := hc.Get(fmt.Sprintf("https://127.0.0.1:%d/ping", webhookPort))
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b) == "pong"
	})
	if conn, err := tls.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", webhookPort), tlsFor(tls.VersionTLS11)); err == nil {
		conn.Close()
		t.Error("the webhook server accepted a TLS 1.1 handshake")
	}

	var held coordinationv1.Lease
	poll(ctx, t, "lease held", func() bool {
		return c.Get(ctx, client.ObjectKey{Namespace: ns, Name: lease}, &held) == nil &&
			held.Spec.HolderIdentity != nil && *held.Spec.HolderIdentity != ""
	})

	// SIGTERM (the context): for --shutdown-delay, /readyz fails while webhooks still answer,
	// so that the Service stops sending the API server here before the server goes.
	stopped := time.Now()
	stop()
	readyz := func() int {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/readyz", health))
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	poll(ctx, t, "/readyz failing after the signal", func() bool { return readyz() == http.StatusInternalServerError })
	if resp, err := hc.Get(fmt.Sprintf("https://127.0.0.1:%d/ping", webhookPort)); err != nil {
		t.Errorf("the webhook server stopped answering within the shutdown delay (%v after the signal): %v", time.Since(stopped), err)
	} else {
		resp.Body.Close()
	}
	select {
	case err := <-done:
		if took := time.Since(stopped); took < 2*time.Second {
			t.Errorf("Run returned %v after the signal, before --shutdown-delay 2s", took)
		}
		if err != nil {
			t.Errorf("Run after cancel = %v, want nil", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return within 30s of cancel")
	}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: lease}, &held); err != nil {
		t.Fatal(err)
	}
	if h := held.Spec.HolderIdentity; h != nil && *h != "" {
		t.Errorf("lease still held by %q after shutdown", *h)
	}
}

// startAPIServer starts an apiserver and etcd (envtest, on the testbed's binaries), stopped
// when the test ends.
func startAPIServer(t *testing.T) *rest.Config {
	t.Helper()
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		t.Fatal("KUBEBUILDER_ASSETS is not set: run through `make unit`, which points it at bin/testbed")
	}
	env := &envtest.Environment{}
	rc, err := env.Start()
	if err != nil {
		t.Fatalf("starting envtest: %v", err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	return rc
}

// mountSecret does what the kubelet does for the Secret volume the chart mounts at --cert-dir:
// it writes the Secret's keys as files, once cert-controller has filled it. envtest has no
// kubelet.
func mountSecret(ctx context.Context, c client.Client, key client.ObjectKey, dir string) {
	_ = wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		var s corev1.Secret
		if err := c.Get(ctx, key, &s); err != nil || len(s.Data["tls.crt"]) == 0 {
			return false, nil
		}
		for name, data := range s.Data {
			if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
				return false, err
			}
		}
		return true, nil
	})
}

// applyChartRBAC renders the chart's RBAC for the one add-on name (helm from KUBEBUILDER_ASSETS,
// where make testbed-bins links it) and creates it.
func applyChartRBAC(ctx context.Context, t *testing.T, c client.Client, name string) {
	t.Helper()
	args := []string{"template", "jsa", "../../charts/jobset-addons", "--namespace", "jobset-addons-system", "--show-only", "templates/rbac.yaml",
		"--show-only", "templates/serviceaccount.yaml"}
	for _, n := range []string{"volumeclaims", "resourceclaims", "sequencer", "podgroups"} {
		args = append(args, "--set", fmt.Sprintf("%s.enabled=%t", n, n == name))
	}
	out, err := exec.CommandContext(ctx, filepath.Join(os.Getenv("KUBEBUILDER_ASSETS"), "helm"), args...).Output()
	if err != nil {
		t.Fatalf("helm template: %v", err)
	}
	for _, doc := range strings.Split(string(out), "\n---") {
		var o unstructured.Unstructured
		if err := yaml.Unmarshal([]byte(doc), &o.Object); err != nil {
			t.Fatalf("chart RBAC: %v", err)
		}
		if len(o.Object) == 0 {
			continue
		}
		if err := c.Create(ctx, &o); err != nil {
			t.Fatalf("creating the chart's %s %s: %v", o.GetKind(), o.GetName(), err)
		}
	}
}

func poll(ctx context.Context, t *testing.T, what string, cond func() bool) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 60*time.Second, true, func(context.Context) (bool, error) {
		return cond(), nil
	}); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func unservedWidget() client.Object {
	w := &unstructured.Unstructured{}
	w.SetGroupVersionKind(schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"})
	return w
}
