package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestLintAPIServerValidation: lint refuses what the API server's own validation refuses in an
// object an add-on would make from the manifest (a PVC of a volumeclaims template, a
// ResourceClaim of a resourceclaims template, a pod of a template with the start barrier),
// each at the path into the annotation or pod template it comes from, and admits the valid.
func TestLintAPIServerValidation(t *testing.T) {
	const tp = policies + "[0].templates[0]"
	const rc = templates + "[0]"
	pt := "spec.replicatedJobs[0].template.spec.template"
	pvc := func(spec string) string {
		return fmt.Sprintf(`{volumeclaims.jobset-addons.io/policies: '[{templates: [{metadata: {name: data}, spec: %s}]}]'}`, spec)
	}
	claim := func(spec string) string {
		return fmt.Sprintf(`{resourceclaims.jobset-addons.io/templates: '[{metadata: {name: gpu}, spec: %s}]'}`, spec)
	}
	cases := map[string]struct {
		annotations, templateAnnotations, container string
		wantFields                                  []string
	}{
		"a valid PVC":                      {annotations: pvc(`{accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}`)},
		"negative storage":                 {annotations: pvc(`{accessModes: [ReadWriteOnce], resources: {requests: {storage: -1Gi}}}`), wantFields: []string{tp + ".spec.resources[storage]"}},
		"storageClassName":                 {annotations: pvc(`{accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}, storageClassName: Fast_SSD}`), wantFields: []string{tp + ".spec.storageClassName"}},
		"unknown volumeMode":               {annotations: pvc(`{accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}, volumeMode: Raw2}`), wantFields: []string{tp + ".spec.volumeMode"}},
		"unknown access mode":              {annotations: pvc(`{accessModes: [ReadWriteSometimes], resources: {requests: {storage: 1Gi}}}`), wantFields: []string{tp + ".spec.accessModes"}},
		"no access modes":                  {annotations: pvc(`{resources: {requests: {storage: 1Gi}}}`), wantFields: []string{tp + ".spec.accessModes"}},
		"a valid ResourceClaim":            {templateAnnotations: claim(`{devices: {requests: [{name: gpu, exactly: {deviceClassName: gpu.example.com}}]}}`)},
		"request name not a label":         {templateAnnotations: claim(`{devices: {requests: [{name: GPU_0, exactly: {deviceClassName: gpu.example.com}}]}}`), wantFields: []string{rc + ".spec.devices.requests[0].name"}},
		"device class name not a DNS name": {templateAnnotations: claim(`{devices: {requests: [{name: gpu, exactly: {deviceClassName: Gpu_Class}}]}}`), wantFields: []string{rc + ".spec.devices.requests[0].exactly.deviceClassName"}},
		"a barrier pod whose request passes its limit": {
			annotations: `{sequencer.jobset-addons.io/start-barrier: JobSet}`,
			container:   `{name: c, image: i, resources: {requests: {cpu: "2"}, limits: {cpu: "1"}}}`,
			wantFields:  []string{pt + ".spec.containers[0].resources.requests"},
		},
		"a valid barrier pod": {annotations: `{sequencer.jobset-addons.io/start-barrier: JobSet}`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if tc.annotations == "" {
				tc.annotations = "{}"
			}
			if tc.templateAnnotations == "" {
				tc.templateAnnotations = "{}"
			}
			if tc.container == "" {
				tc.container = `{name: c, image: i, volumeMounts: [{name: data, mountPath: /data}]}`
			}
			manifest := fmt.Sprintf(`apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata: {name: train, namespace: default, annotations: %s}
spec:
  replicatedJobs:
  - name: node
    template:
      metadata: {annotations: %s}
      spec: {parallelism: 2, completions: 2, template: {spec: {containers: [%s]}}}
`, tc.annotations, tc.templateAnnotations, tc.container)
			var out, errOut bytes.Buffer
			code := Lint([]string{"-f", "-", "-o", "json"}, strings.NewReader(manifest), &out, &errOut)
			var findings []finding
			if err := json.Unmarshal(out.Bytes(), &findings); err != nil {
				t.Fatalf("output %q: %v (stderr %s)", out.String(), err, errOut.String())
			}
			var got []string
			for _, f := range findings {
				if !f.Warning {
					got = append(got, f.Field)
				}
			}
			if diff := cmp.Diff(tc.wantFields, got); diff != "" {
				t.Errorf("fields refused (-want +got):\n%s\n%s", diff, out.String())
			}
			if wantCode := min(len(tc.wantFields), 1); code != wantCode {
				t.Errorf("exit status %d, want %d", code, wantCode)
			}
		})
	}
}
