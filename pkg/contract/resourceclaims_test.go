package contract

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// KEP-762's example, as the annotation value, with a pod-level-only claim added.
const kep762Templates = `
- metadata:
    name: imex-channel
  spec:
    devices:
      requests:
      - name: imex-channel
        exactly:
          deviceClassName: imex.nvidia.com
  containers:
  - worker # Only the 'worker' container gets the 'imex-channel' claim reference
- metadata:
    name: shared-data
    labels: {team: ml}
  spec:
    devices:
      requests:
      - name: shared-data
        exactly:
          deviceClassName: shared-data-resource
      config:
      - opaque:
          driver: shared-data.example.com
          parameters: {"mode": "rw", "size": 2}
  whenJobFinished: Retain
- metadata:
    name: pod-level
  spec: {}
  containers: []
`

func claimSpec(request, class string) resourcev1.ResourceClaimSpec {
	return resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{
		Requests: []resourcev1.DeviceRequest{{Name: request, Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: class}}},
	}}
}

func TestParseResourceClaimTemplates(t *testing.T) {
	sharedSpec := claimSpec("shared-data", "shared-data-resource")
	sharedSpec.Devices.Config = []resourcev1.DeviceClaimConfiguration{{
		DeviceConfiguration: resourcev1.DeviceConfiguration{Opaque: &resourcev1.OpaqueDeviceConfiguration{
			Driver:     "shared-data.example.com",
			Parameters: runtime.RawExtension{Raw: []byte(`{"mode":"rw","size":2}`)},
		}},
	}}
	cases := map[string]struct {
		value string
		want  []ResourceClaimTemplate
	}{
		"KEP-762 example, YAML, defaults filled in": {
			value: kep762Templates,
			want: []ResourceClaimTemplate{
				{
					ObjectMeta:      metav1.ObjectMeta{Name: "imex-channel"},
					Spec:            claimSpec("imex-channel", "imex.nvidia.com"),
					Containers:      &[]string{"worker"},
					WhenJobFinished: RetentionPolicyDelete,
				},
				{
					ObjectMeta:      metav1.ObjectMeta{Name: "shared-data", Labels: map[string]string{"team": "ml"}},
					Spec:            sharedSpec,
					WhenJobFinished: RetentionPolicyRetain,
				},
				{
					ObjectMeta:      metav1.ObjectMeta{Name: "pod-level"},
					Containers:      &[]string{},
					WhenJobFinished: RetentionPolicyDelete,
				},
			},
		},
		"JSON, null containers is every container": {
			value: `[{"metadata":{"name":"tpu"},"spec":{"devices":{"requests":[{"name":"tpu","exactly":{"deviceClassName":"tpu.google.com"}}]}},"containers":null}]`,
			want: []ResourceClaimTemplate{{
				ObjectMeta:      metav1.ObjectMeta{Name: "tpu"},
				Spec:            claimSpec("tpu", "tpu.google.com"),
				WhenJobFinished: DefaultWhenJobFinished,
			}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, errs := ParseResourceClaimTemplates(tc.value, ReplicatedJobAnnotationPath(0, TemplatesAnnotationKey))
			if len(errs) > 0 {
				t.Fatalf("unexpected errors: %v", errs.ToAggregate())
			}
			if diff := cmp.Diff(tc.want, got, cmpOpts...); diff != "" {
				t.Errorf("templates (-want +got):\n%s", diff)
			}
		})
	}
}

func TestResourceClaimTemplateContainers(t *testing.T) {
	cases := map[string]struct {
		containers        *[]string
		container         string
		wantApplies       bool
		wantAllContainers bool
	}{
		"omitted: every container":       {nil, "helper", true, true},
		"listed container":               {&[]string{"worker"}, "worker", true, false},
		"unlisted container":             {&[]string{"worker"}, "helper", false, false},
		"explicit empty list: pod-level": {&[]string{}, "worker", false, false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			tpl := ResourceClaimTemplate{Containers: tc.containers}
			if got := tpl.AppliesToContainer(tc.container); got != tc.wantApplies {
				t.Errorf("AppliesToContainer(%q) = %v, want %v", tc.container, got, tc.wantApplies)
			}
			if got := tpl.AllContainers(); got != tc.wantAllContainers {
				t.Errorf("AllContainers() = %v, want %v", got, tc.wantAllContainers)
			}
		})
	}
}
