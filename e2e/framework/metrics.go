package framework

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/jobset-addons/jobset-addons/e2e/testbed"
)

// WebhookCalls counts the apiserver's calls of each webhook of the add-on name, by webhook
// name, from the apiserver's apiserver_admission_webhook_admission_duration_seconds.
func WebhookCalls(ctx context.Context, t *testing.T, cfg *envconf.Config, name string) map[string]float64 {
	t.Helper()
	calls := map[string]float64{}
	for line, v := range testbed.Samples(APIServerMetrics(ctx, t, cfg), "apiserver_admission_webhook_admission_duration_seconds_count") {
		if !strings.Contains(line, "."+name+".jobset-addons.io") {
			continue
		}
		hook := line[strings.Index(line, `name="`)+6:]
		hook = hook[:strings.Index(hook, `"`)]
		calls[hook] += v
	}
	return calls
}

// AddonMetrics is the Prometheus text the add-on name serves on its metrics port.
// Installed in the cluster (E2E_ADDONS=installed), it is read through the apiserver's proxy to
// the chart's metrics Service.
func AddonMetrics(ctx context.Context, t *testing.T, name string) string {
	t.Helper()
	if Installed() {
		rc, err := clientcmd.BuildConfigFromFlags("", os.Getenv("KUBECONFIG"))
		if err != nil {
			t.Fatal(err)
		}
		cs, err := kubernetes.NewForConfig(rc)
		if err != nil {
			t.Fatal(err)
		}
		body, err := cs.CoreV1().Services(testbed.AddonNamespace).ProxyGet("http", "jobset-addons-"+name+"-metrics", "8080", "/metrics", nil).DoRaw(ctx)
		if err != nil {
			t.Fatalf("%s's metrics through its Service: %v", name, err)
		}
		return string(body)
	}
	tb, err := testbed.DefaultConfig()
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d/metrics", tb.AddonPorts(name).Metrics), nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(body)
}

// ExpectMetrics fails the test for each of series that the add-on name does not serve on its
// metrics port.
func ExpectMetrics(ctx context.Context, t *testing.T, name string, series ...string) {
	t.Helper()
	body := AddonMetrics(ctx, t, name)
	for _, s := range series {
		if !strings.Contains(body, s) {
			t.Errorf("%s's /metrics has no %s", name, s)
		}
	}
}

// APIServerMetrics is the Prometheus text the cluster's apiserver serves on /metrics.
func APIServerMetrics(ctx context.Context, t *testing.T, cfg *envconf.Config) string {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cfg.Client().RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	raw, err := cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}
