package webhook

import (
	"context"
	"testing"

	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/pkg/addon/addontest"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// TestKueueWarning: a JobSet that names a LocalQueue and whose sequencer-held stages wait for a
// predecessor to complete is warned of Kueue's waitForPodsReady, naming the setting; one that
// waits only for Ready, names no LocalQueue or is not sequenced by the sequencer is not.
func TestKueueWarning(t *testing.T) {
	queued := func() *addontest.JobSetWrapper {
		return addontest.JobSet("ns", "a").Label(contract.KueueQueueNameLabelKey, "team-a")
	}
	for name, tc := range map[string]struct {
		js   *jobsetv1alpha2.JobSet
		want []string // what the one warning must say; none: no warning
	}{
		"InOrder, Complete by default": {
			js: queued().InOrder().ReplicatedJobs(addontest.ReplicatedJob("initializer"), addontest.ReplicatedJob("node").Replicas(2)).Obj(),
			want: []string{`LocalQueue "team-a"`, "ReplicatedJobs node still wait for initializer to complete",
				"waitForPodsReady.timeout", "wait-for Ready", "docs/install.md"},
		},
		"three stages: both later ones named": {
			js:   queued().InOrder().ReplicatedJobs(addontest.ReplicatedJob("a"), addontest.ReplicatedJob("b"), addontest.ReplicatedJob("c")).Obj(),
			want: []string{"ReplicatedJobs b, c still wait for a, b to complete"},
		},
		"InOrder, wait-for Ready": {
			js: queued().InOrder().Annotation(contract.WaitForAnnotationKey, "Ready").
				ReplicatedJobs(addontest.ReplicatedJob("initializer"), addontest.ReplicatedJob("node")).Obj(),
		},
		"fan-in, one predecessor Complete": {
			js: queued().ReplicatedJobs(
				addontest.ReplicatedJob("data"),
				addontest.ReplicatedJob("model"),
				addontest.ReplicatedJob("node").DependsOnAnnotation("- name: data\n  status: Ready\n- name: model\n"),
			).Obj(),
			want: []string{"ReplicatedJobs node still wait for model to complete"},
		},
		"no LocalQueue": {
			js: addontest.JobSet("ns", "a").InOrder().ReplicatedJobs(addontest.ReplicatedJob("initializer"), addontest.ReplicatedJob("node")).Obj(),
		},
		"upstream dependsOn only: not the sequencer's": {
			js: queued().ReplicatedJobs(addontest.ReplicatedJob("initializer"),
				addontest.ReplicatedJob("node").DependsOnStatus("initializer", jobsetv1alpha2.DependencyComplete)).Obj(),
		},
	} {
		t.Run(name, func(t *testing.T) {
			warnings, err := (&JobSetWebhook{}).ValidateCreate(context.Background(), tc.js)
			if err != nil {
				t.Fatalf("refused: %v", err)
			}
			addontest.WantWarning(t, warnings, tc.want...)
		})
	}
}
