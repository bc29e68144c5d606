package volumeclaims_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/e2e/framework"
	"github.com/jobset-addons/jobset-addons/e2e/testbed"
)

// webhookCalls counts the apiserver's calls of each of the add-on's webhooks, from its metrics.
func webhookCalls(ctx context.Context, t *testing.T, cfg *envconf.Config) map[string]float64 {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cfg.Client().RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	raw, err := cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		t.Fatal(err)
	}
	calls := map[string]float64{}
	for _, line := range strings.Split(string(raw), "\n") {
		if !strings.HasPrefix(line, "apiserver_admission_webhook_admission_duration_seconds_count{") || !strings.Contains(line, "volumeclaims.jobset-addons.io") {
			continue
		}
		name := line[strings.Index(line, `name="`)+6:]
		name = name[:strings.Index(name, `"`)]
		v, _ := strconv.ParseFloat(line[strings.LastIndex(line, " ")+1:], 64)
		calls[name] += v
	}
	return calls
}

// TestPlainJobSetNeverReachesWebhooks: a JobSet without policies, and its pods, run without
// any call to the add-on's webhooks.
func TestPlainJobSetNeverReachesWebhooks(t *testing.T) {
	f := framework.NamespacedFeature("a JobSet without the annotation never reaches the webhooks", "no webhook call", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		c := framework.Client(t, cfg)
		before := webhookCalls(ctx, t, cfg)
		js := newJobSet(framework.NamespaceFrom(ctx), "plain", "", replicatedJob("w", 2, 2, "data"))
		js.Spec.ReplicatedJobs[0].Template.Spec.Template.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
		framework.CreateAll(ctx, t, c, js)
		framework.WaitJobSet(ctx, t, c, js, jobsetv1alpha2.JobSetCompleted)
		if after := webhookCalls(ctx, t, cfg); fmt.Sprint(after) != fmt.Sprint(before) {
			t.Errorf("webhook calls went from %v to %v", before, after)
		}
		return ctx
	})
	testenv.Test(t, f)
}

// metricsFeature: the controller counts what it created, with bounded labels only. It runs at
// the end of TestStories, which creates both kinds.
func metricsFeature() features.Feature {
	return features.New("the controller's metrics count PVCs").
		Assess("counters", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			tb, err := testbed.DefaultConfig()
			if err != nil {
				t.Fatal(err)
			}
			resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", tb.AddonPorts("volumeclaims").Metrics))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			for _, want := range []string{
				`jobset_addons_volumeclaims_created_total{scope="per-pod"}`,
				`jobset_addons_volumeclaims_created_total{scope="shared"}`,
				`jobset_addons_volumeclaims_reconcile_duration_seconds_count`,
			} {
				if !strings.Contains(string(body), want) {
					t.Errorf("/metrics has no %s", want)
				}
			}
			return ctx
		}).Feature()
}
