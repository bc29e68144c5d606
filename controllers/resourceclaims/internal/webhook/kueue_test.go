package webhook

import (
	"context"
	"strings"
	"testing"
)

const validTemplates = `[{metadata: {name: gpu}, spec: {devices: {requests: [{name: g, exactly: {deviceClassName: gpu.example.com}}]}}}]`

func TestKueueWarning(t *testing.T) {
	for _, tc := range []struct {
		name   string
		labels map[string]string
		plain  bool // no ReplicatedJob has templates
		want   []string
	}{
		{name: "no LocalQueue"},
		{name: "empty LocalQueue", labels: map[string]string{kueueQueueNameLabel: ""}},
		{name: "LocalQueue, no templates", labels: map[string]string{kueueQueueNameLabel: "team-a"}, plain: true},
		{name: "LocalQueue and templates", labels: map[string]string{kueueQueueNameLabel: "team-a"}, want: []string{
			"Kueue does not count the devices of the claims made for ReplicatedJobs workers (resourceclaims.jobset-addons.io/templates)",
			`LocalQueue "team-a"`, "device quota (deviceClassMappings) is not charged", "docs/install.md",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			js := testJobSet(validTemplates, nil)
			js.Labels = tc.labels
			if tc.plain {
				delete(js.Spec.ReplicatedJobs[1].Template.Annotations, "resourceclaims.jobset-addons.io/templates")
			}
			w := &JobSetWebhook{Gates: gates(t, true)}
			warnings, err := w.ValidateCreate(context.Background(), js)
			if err != nil {
				t.Fatal(err)
			}
			if len(tc.want) == 0 {
				if len(warnings) != 0 {
					t.Errorf("warnings %q, want none", warnings)
				}
				return
			}
			if len(warnings) != 1 {
				t.Fatalf("warnings %q, want one", warnings)
			}
			for _, s := range tc.want {
				if !strings.Contains(warnings[0], s) {
					t.Errorf("warning %q: want it to say %q", warnings[0], s)
				}
			}
		})
	}
}
