package sequencer_test

import (
	"context"
	"fmt"
	"testing"

	"sigs.k8s.io/e2e-framework/pkg/envconf"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/e2e/framework"
	"github.com/jobset-addons/jobset-addons/pkg/addon/addontest"
)

// TestPlainJobSetNeverReachesWebhooks: a JobSet without sequencer annotations, even one
// sequenced by upstream dependsOn, runs without any call to the sequencer's webhooks.
func TestPlainJobSetNeverReachesWebhooks(t *testing.T) {
	f := framework.NamespacedFeature("a JobSet without sequencer annotations never reaches the webhooks", "no webhook call", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		c := framework.Client(t, cfg)
		before := framework.WebhookCalls(ctx, t, cfg, addonName)
		js := addontest.JobSet(framework.NamespaceFrom(ctx), "plain").ReplicatedJobs(replicated("a", 1, 1, "1s"), replicated("b", 1, 1, "1s")).Obj()
		js.Spec.ReplicatedJobs[1].DependsOn = []jobsetv1alpha2.DependsOn{{Name: "a", Status: jobsetv1alpha2.DependencyComplete}}
		framework.CreateAll(ctx, t, c, js)
		framework.WaitJobSet(ctx, t, c, js, jobsetv1alpha2.JobSetCompleted)
		if after := framework.WebhookCalls(ctx, t, cfg, addonName); fmt.Sprint(after) != fmt.Sprint(before) {
			t.Errorf("webhook calls went from %v to %v", before, after)
		}
		if len(before) == 0 {
			t.Errorf("no call of the sequencer's webhooks counted at all: is the metric there?")
		}
		return ctx
	})
	testenv.Test(t, f)
}
