package podgroups

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/pkg/addon/addontest"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// sized is a JobSet of one ReplicatedJob of replicas Jobs of pods pods, each requesting 1 CPU and
// 1Ti.
func sized(replicas, pods int32) *jobsetv1alpha2.JobSet {
	return addontest.JobSet("ns", "big").Annotation(contract.SchedulerAnnotationKey, "volcano").
		ReplicatedJobs(addontest.ReplicatedJob("w").Replicas(replicas).Pods(pods).Requests("1", "1Ti")).Obj()
}

// TestGangSize: a billion pods are summed at once, exactly and fast; more pods than an int32
// holds are refused, not wrapped around.
func TestGangSize(t *testing.T) {
	start := time.Now()
	gangs, errs := Gangs(sized(10_000, 100_000), Settings{Scheduler: contract.SchedulerVolcano})
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if took := time.Since(start); took > time.Second {
		t.Logf("summing took %s", took) // informative: the sum is one multiplication per resource
	}
	g := gangs[0]
	if g.MinMember != 1_000_000_000 {
		t.Errorf("minMember %d, want 1e9", g.MinMember)
	}
	cpu, mem := g.MinResources[corev1.ResourceCPU], g.MinResources[corev1.ResourceMemory]
	if cpu.Cmp(resource.MustParse("1G")) != 0 {
		t.Errorf("cpu %s, want 1e9", cpu.String())
	}
	if mem.String() != "1000000000Ti" { // beyond int64 bytes: compared as written
		t.Errorf("memory %s, want 1000000000Ti", mem.String())
	}

	_, errs = Gangs(sized(3, 1<<30), Settings{Scheduler: contract.SchedulerVolcano})
	if len(errs) != 1 || errs[0].Field != "spec.replicatedJobs" {
		t.Errorf("3 x 2^30 pods: errors %v, want one at spec.replicatedJobs", errs)
	}
}
