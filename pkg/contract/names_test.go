package contract

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestNames(t *testing.T) {
	long := func(n int) string { return strings.Repeat("a", n) }
	cases := map[string]struct {
		build      func() (string, error)
		want       string
		wantObject string // of the *NameError, when the name is refused
	}{
		"per-pod PVC, KEP-572 story 1": {
			build: func() (string, error) {
				return PerPodVolumeClaimName("checkpoint-storage", "distributed-trainjob", "node", 3, 1)
			},
			want: "checkpoint-storage-distributed-trainjob-node-3-1",
		},
		"per-pod PVC, 253 characters": {
			build: func() (string, error) { return PerPodVolumeClaimName(long(100), long(100), long(47), 0, 0) },
			want:  long(100) + "-" + long(100) + "-" + long(47) + "-0-0",
		},
		"per-pod PVC, 254 characters": {
			build:      func() (string, error) { return PerPodVolumeClaimName(long(100), long(100), long(47), 10, 0) },
			wantObject: "per-pod PersistentVolumeClaim",
		},
		"per-pod PVC, negative completion index": {
			build:      func() (string, error) { return PerPodVolumeClaimName("data", "js", "node", 0, -1) },
			wantObject: "per-pod PersistentVolumeClaim",
		},
		"shared PVC, KEP-572 story 2": {
			build: func() (string, error) { return SharedVolumeClaimName("initializer", "trainjob-qwen2-5") },
			want:  "initializer-trainjob-qwen2-5",
		},
		"shared PVC, 253 characters": {
			build: func() (string, error) { return SharedVolumeClaimName(long(126), long(126)) },
			want:  long(126) + "-" + long(126),
		},
		"shared PVC, 254 characters": {
			build:      func() (string, error) { return SharedVolumeClaimName(long(126), long(127)) },
			wantObject: "shared PersistentVolumeClaim",
		},
		"shared PVC, not a DNS subdomain": {
			build:      func() (string, error) { return SharedVolumeClaimName("Data", "js") },
			wantObject: "shared PersistentVolumeClaim",
		},
		"ResourceClaim, first attempt": {
			build: func() (string, error) { return ResourceClaimName("gpu-training-worker-group-0", "imex-channel", 0) },
			want:  "gpu-training-worker-group-0-imex-channel",
		},
		"ResourceClaim, restart attempt 2": {
			build: func() (string, error) { return ResourceClaimName("gpu-training-worker-group-0", "imex-channel", 2) },
			want:  "gpu-training-worker-group-0-r2-imex-channel",
		},
		"ResourceClaim, too long": {
			build:      func() (string, error) { return ResourceClaimName(long(200), long(60), 1) },
			wantObject: "ResourceClaim",
		},
		"ResourceClaim, negative attempt": {
			build:      func() (string, error) { return ResourceClaimName("job-0", "imex", -1) },
			wantObject: "ResourceClaim",
		},
		"PodGroup": {
			build: func() (string, error) { return PodGroupName("fine-tune-llm") },
			want:  "fine-tune-llm",
		},
		"PodGroup, too long": {
			build:      func() (string, error) { return PodGroupName(long(254)) },
			wantObject: "PodGroup",
		},
		"stage PodGroup": {
			build: func() (string, error) { return StagePodGroupName("fine-tune-llm", 1) },
			want:  "fine-tune-llm-stage-1",
		},
		"stage PodGroup, too long": {
			build:      func() (string, error) { return StagePodGroupName(long(246), 0) },
			wantObject: "stage PodGroup",
		},
		"Workload": {
			build: func() (string, error) { return WorkloadName("fine-tune-llm") },
			want:  "fine-tune-llm",
		},
		"Workload, not a name": {
			build:      func() (string, error) { return WorkloadName("Fine_Tune") },
			wantObject: "Workload",
		},
		"PodGroup template": {
			build: func() (string, error) { return PodGroupTemplateName(7) },
			want:  "stage-7",
		},
		"PodGroup template, negative stage": {
			build:      func() (string, error) { return PodGroupTemplateName(-1) },
			wantObject: "PodGroup template",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := tc.build()
			var nameErr *NameError
			if errors.As(err, &nameErr) {
				if nameErr.Object != tc.wantObject {
					t.Errorf("error names %q, want %q: %v", nameErr.Object, tc.wantObject, err)
				}
				if !strings.HasPrefix(err.Error(), tc.wantObject+" name") {
					t.Errorf("error %q does not start with what was refused, %q", err, tc.wantObject)
				}
			} else if err != nil || tc.wantObject != "" {
				t.Fatalf("error %v, want a *NameError for %q", err, tc.wantObject)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("name (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNameErrorSaysTheLength(t *testing.T) {
	_, err := SharedVolumeClaimName(strings.Repeat("a", 200), strings.Repeat("b", 100))
	want := "it is 301 characters long, more than the 253 allowed"
	if err == nil || !strings.Contains(err.Error(), want) || strings.Count(err.Error(), "253") != 1 {
		t.Errorf("error %v, want it to say %q once", err, want)
	}
}
