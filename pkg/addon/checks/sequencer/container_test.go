package sequencer

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	"github.com/jobset-addons/jobset-addons/pkg/addon/addontest"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// TestBarrierContainerWhateverThePod: the barrier container sets its own non-root user and
// group and everything Pod Security's restricted level asks of a container, so that its
// settings win over a pod's securityContext that runs as root, or says runAsNonRoot false; and
// requests and limits of CPU and memory, for quotas that ask for limits.
func TestBarrierContainerWhateverThePod(t *testing.T) {
	js := addontest.JobSet("ns", "a").Annotation(contract.StartBarrierAnnotationKey, "JobSet").ReplicatedJobs(addontest.ReplicatedJob("x")).Obj()
	js.Spec.ReplicatedJobs[0].Template.Spec.Template.Spec.SecurityContext = &corev1.PodSecurityContext{
		RunAsUser: ptr.To[int64](0), RunAsGroup: ptr.To[int64](0), RunAsNonRoot: ptr.To(false),
		FSGroup: ptr.To[int64](1000), SupplementalGroups: []int64{2000},
	}
	InjectBarrier(js, BarrierSettings{Image: "b", Resources: DefaultBarrierResources()}, contract.DefaultStartBarrierTimeout)
	c := js.Spec.ReplicatedJobs[0].Template.Spec.Template.Spec.InitContainers[0]
	sc := c.SecurityContext
	got := []any{ptr.Deref(sc.RunAsUser, -1), ptr.Deref(sc.RunAsGroup, -1), ptr.Deref(sc.RunAsNonRoot, false),
		ptr.Deref(sc.AllowPrivilegeEscalation, true), ptr.Deref(sc.Privileged, true), sc.Capabilities.Drop, sc.SeccompProfile.Type}
	want := []any{int64(65532), int64(65532), true, false, false, []corev1.Capability{"ALL"}, corev1.SeccompProfileTypeRuntimeDefault}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("securityContext (-want +got):\n%s", diff)
	}
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if _, ok := c.Resources.Requests[name]; !ok {
			t.Errorf("no %s request", name)
		}
		if _, ok := c.Resources.Limits[name]; !ok {
			t.Errorf("no %s limit", name)
		}
	}
	if m := BarrierVolume().DownwardAPI.DefaultMode; *m&0o004 == 0 {
		t.Errorf("the state file (mode %o) is not readable by the barrier's user", *m)
	}
	if errs := ValidateCreate(js); len(errs) > 0 {
		t.Errorf("the injected barrier is refused: %v", errs)
	}
}

func TestBarrierSettingsValidate(t *testing.T) {
	q := resource.MustParse
	cases := map[string]struct {
		s       BarrierSettings
		wantErr bool
	}{
		"defaults":           {s: BarrierSettings{Image: "b", Resources: DefaultBarrierResources()}},
		"limit equal":        {s: BarrierSettings{Image: "b", Resources: BarrierResources(q("100m"), q("100m"), q("32Mi"), q("32Mi"))}},
		"no image":           {s: BarrierSettings{Resources: DefaultBarrierResources()}, wantErr: true},
		"cpu limit below":    {s: BarrierSettings{Image: "b", Resources: BarrierResources(q("100m"), q("50m"), q("16Mi"), q("32Mi"))}, wantErr: true},
		"memory limit below": {s: BarrierSettings{Image: "b", Resources: BarrierResources(q("10m"), q("50m"), q("64Mi"), q("32Mi"))}, wantErr: true},
		"zero request":       {s: BarrierSettings{Image: "b", Resources: BarrierResources(q("0"), q("50m"), q("16Mi"), q("32Mi"))}, wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if err := tc.s.Validate(); (err != nil) != tc.wantErr {
				t.Errorf("Validate() = %v, want an error: %v", err, tc.wantErr)
			}
		})
	}
}
