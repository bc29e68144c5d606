package volumeclaims_test

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/e2e/framework"
)

// TestPlainJobSetNeverReachesWebhooks: a JobSet without policies, and its pods, run without
// any call to the add-on's webhooks.
func TestPlainJobSetNeverReachesWebhooks(t *testing.T) {
	f := framework.NamespacedFeature("a JobSet without the annotation never reaches the webhooks", "no webhook call", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		c := framework.Client(t, cfg)
		before := framework.WebhookCalls(ctx, t, cfg, "volumeclaims")
		js := newJobSet(framework.NamespaceFrom(ctx), "plain", "", replicatedJob("w", 2, 2, "data"))
		js.Spec.ReplicatedJobs[0].Template.Spec.Template.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
		framework.CreateAll(ctx, t, c, js)
		framework.WaitJobSet(ctx, t, c, js, jobsetv1alpha2.JobSetCompleted)
		if after := framework.WebhookCalls(ctx, t, cfg, "volumeclaims"); fmt.Sprint(after) != fmt.Sprint(before) {
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
			framework.ExpectMetrics(ctx, t, "volumeclaims",
				`jobset_addons_volumeclaims_created_total{scope="per-pod"}`,
				`jobset_addons_volumeclaims_created_total{scope="shared"}`,
				`jobset_addons_volumeclaims_reconcile_duration_seconds_count`)
			return ctx
		}).Feature()
}
