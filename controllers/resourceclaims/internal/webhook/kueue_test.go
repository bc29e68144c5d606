package webhook

import (
	"context"
	"testing"

	"github.com/jobset-addons/jobset-addons/pkg/addon/addontest"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
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
		{name: "empty LocalQueue", labels: map[string]string{contract.KueueQueueNameLabelKey: ""}},
		{name: "LocalQueue, no templates", labels: map[string]string{contract.KueueQueueNameLabelKey: "team-a"}, plain: true},
		{name: "LocalQueue and templates", labels: map[string]string{contract.KueueQueueNameLabelKey: "team-a"}, want: []string{
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
			addontest.WantWarning(t, warnings, tc.want...)
		})
	}
}
