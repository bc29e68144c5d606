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
	"path/filepath"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/component-base/featuregate"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// TestRunOnAPIServer starts the runtime against a real apiserver and etcd (envtest, on the
// testbed's binaries) with self-signed webhook certificates, leader election and a gate.
func TestRunOnAPIServer(t *testing.T) {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		t.Fatal("KUBEBUILDER_ASSETS is not set: run through `make unit`, which points it at bin/testbed")
	}
	env := &envtest.Environment{}
	rc, err := env.Start()
	if err != nil {
		t.Fatalf("starting envtest: %v", err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	c, err := client.New(rc, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	const ns, cfgName = "jobset-addons-system", "jobset-addons-test"
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
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "jobset-addons-test-webhook-cert"}},
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

	// Two ConfigMaps, one managed by the add-on: the scoped cache must hold only that one.
	for name, lbls := range map[string]map[string]string{
		"managed":   {contract.ManagedByLabelKey: "test.jobset-addons.io"},
		"unrelated": nil,
	} {
		if err := c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: lbls}}); err != nil {
			t.Fatal(err)
		}
	}

	health, webhookPort := freePort(t), freePort(t)
	setupGates := make(chan bool, 1)
	cached := make(chan []string, 1)
	opts := Options{
		Name:               "test",
		MutatingWebhooks:   true,
		ValidatingWebhooks: true,
		FeatureGates:       map[featuregate.Feature]featuregate.FeatureSpec{"PartOne": {Default: false, PreRelease: featuregate.Alpha}},
		Cache:              map[client.Object]cache.ByObject{&corev1.ConfigMap{}: ManagedBy("test.jobset-addons.io")},
		Setup: func(ctx context.Context, mgr ctrl.Manager, gates featuregate.FeatureGate) error {
			var cms corev1.ConfigMapList
			if err := mgr.GetCache().List(ctx, &cms, client.InNamespace(ns)); err != nil {
				return err
			}
			var names []string
			for _, cm := range cms.Items {
				names = append(names, cm.Name)
			}
			cached <- names
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
		"--webhook-configuration-name", cfgName,
		"--feature-gates", "PartOne=true",
	}
	go mountSecret(ctx, c, client.ObjectKey{Namespace: ns, Name: "jobset-addons-test-webhook-cert"}, certDir)
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- Run(runCtx, opts, args, rc) }()

	select {
	case enabled := <-setupGates:
		if !enabled {
			t.Error("Setup saw PartOne disabled, want enabled by --feature-gates")
		}
	case err := <-done:
		t.Fatalf("Run returned before Setup: %v", err)
	case <-ctx.Done():
		t.Fatal("Setup never ran: certificates never became ready")
	}

	if got := <-cached; len(got) != 1 || got[0] != "managed" {
		t.Errorf("ConfigMaps in the scoped cache = %v, want only [managed]", got)
	}

	var secret corev1.Secret
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "jobset-addons-test-webhook-cert"}, &secret); err != nil {
		t.Fatalf("certificate secret: %v", err)
	}
	ca := secret.Data["ca.crt"]
	if len(ca) == 0 {
		t.Fatal("certificate secret has no ca.crt")
	}
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

	// The webhook server presents a certificate for the Service's DNS name, signed by the CA.
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{
		RootCAs: pool, ServerName: "jobset-addons-test-webhook." + ns + ".svc",
	}}}
	poll(ctx, t, "webhook server answers over TLS", func() bool {
		resp, err := hc.Get(fmt.Sprintf("https://127.0.0.1:%d/ping", webhookPort))
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b) == "pong"
	})

	var lease coordinationv1.Lease
	poll(ctx, t, "lease held", func() bool {
		return c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "test.jobset-addons.io"}, &lease) == nil &&
			lease.Spec.HolderIdentity != nil && *lease.Spec.HolderIdentity != ""
	})

	stop()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run after cancel = %v, want nil", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return within 30s of cancel")
	}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "test.jobset-addons.io"}, &lease); err != nil {
		t.Fatal(err)
	}
	if h := lease.Spec.HolderIdentity; h != nil && *h != "" {
		t.Errorf("lease still held by %q after shutdown", *h)
	}
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
