package podgroups

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/jobset-addons/jobset-addons/pkg/addon/addontest"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// TestVolcanoWarnings: a Volcano JobSet is warned of, per ReplicatedJob, when its pods request
// nothing Volcano counts: no CPU, memory or extended resource, in requests or (a template is
// not defaulted) limits, in containers, init containers or overhead. Ephemeral storage alone
// does not count; a ReplicatedJob of no pods has none to warn of. Lint (Warnings) tells the
// same, and nothing for another scheduler.
func TestVolcanoWarnings(t *testing.T) {
	set := func(edit func(*corev1.PodSpec)) *addontest.ReplicatedJobWrapper {
		rj := addontest.ReplicatedJob("x")
		edit(rj.PodSpec())
		return rj
	}
	q := resource.MustParse
	cases := map[string]struct {
		rj   *addontest.ReplicatedJobWrapper
		warn bool
	}{
		"no requests":   {addontest.ReplicatedJob("x"), true},
		"a CPU request": {addontest.ReplicatedJob("x").Requests("100m", "0"), false},
		"ephemeral storage only": {set(func(s *corev1.PodSpec) {
			s.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceEphemeralStorage: q("1Gi")}
		}), true},
		"zero CPU and memory": {addontest.ReplicatedJob("x").Requests("0", "0"), true},
		"a GPU limit, no requests": {set(func(s *corev1.PodSpec) {
			s.Containers[0].Resources.Limits = corev1.ResourceList{"nvidia.com/gpu": q("1")}
		}), false},
		"an init container's memory": {set(func(s *corev1.PodSpec) {
			s.InitContainers = []corev1.Container{{Name: "init", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: q("64Mi")}}}}
		}), false},
		"overhead": {set(func(s *corev1.PodSpec) { s.Overhead = corev1.ResourceList{corev1.ResourceCPU: q("250m")} }), false},
		"no pods":  {addontest.ReplicatedJob("x").Parallelism(0), false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			for _, s := range []contract.Scheduler{contract.SchedulerVolcano, contract.SchedulerCoscheduling} {
				js := addontest.JobSet("ns", "mpi").Annotation(contract.SchedulerAnnotationKey, string(s)).ReplicatedJobs(
					addontest.ReplicatedJob("w").Replicas(2).Requests("1", "1Gi"), tc.rj,
				).Obj()
				var want []string
				if tc.warn && s == contract.SchedulerVolcano {
					want = []string{"spec.replicatedJobs[x]: its pods request no CPU, memory or other resource, and Volcano counts such a pod as placed before it is: the rest of gang mpi may start while they wait (for a node their selector, affinity or tolerations allow), and they start apart from it; give their containers a CPU or memory request"}
				}
				if diff := cmp.Diff(want, Warnings(js)); diff != "" {
					t.Errorf("%s: warnings (-want +got):\n%s", s, diff)
				}
			}
		})
	}
}
