package barrier

import (
	"testing"

	batchv1 "k8s.io/api/batch/v1"

	"github.com/jobset-addons/jobset-addons/pkg/addon/addontest"
	"github.com/jobset-addons/jobset-addons/pkg/addon/checks/sequencer"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// TestPodsRefused: the sequencer claims a Job's FailedCreate only when it is about what it put
// in the pod: the refusal names its barrier container (or volume), or a LimitRange constraint
// it names is one the barrier container itself breaks. A refusal about another add-on's object
// (a PVC, a claim) or the user's containers is left to whoever it concerns, so it is told once.
func TestPodsRefused(t *testing.T) {
	const pod = `Error creating: pods "a-x-0-0-abc" is forbidden: `
	barrier := addontest.JobSet("ns", "a").Annotation(contract.StartBarrierAnnotationKey, "JobSet").ReplicatedJobs(addontest.ReplicatedJob("x")).Obj()
	// The barrier container as the webhook injects it: requests 10m / 16Mi, limits 50m / 32Mi.
	sequencer.InjectBarrier(barrier, sequencer.BarrierSettings{Image: "b", Resources: sequencer.DefaultBarrierResources()}, contract.DefaultStartBarrierTimeout)
	// A Job as the sequencer's cache holds it: labels, no pod template.
	job := &batchv1.Job{ObjectMeta: addontest.Job(barrier, "x", 0).Obj().ObjectMeta}
	other := &batchv1.Job{ObjectMeta: addontest.Job(barrier, "y", 0).Obj().ObjectMeta} // of no ReplicatedJob of the JobSet
	plain := addontest.JobSet("ns", "a").Obj()
	cases := map[string]struct {
		msg    string
		noBarr bool
		noJob  bool
		other  bool
		want   bool
	}{
		"quota names it":              {msg: pod + `failed quota: q: must specify limits.cpu for: jobset-addons-start-barrier`, want: true},
		"Pod Security names it":       {msg: pod + `violates PodSecurity "restricted:latest": runAsNonRoot != true (container "jobset-addons-start-barrier" must not set runAsNonRoot=false)`, want: true},
		"LimitRange min above it":     {msg: pod + `minimum cpu usage per Container is 100m, but request is 10m`, want: true},
		"LimitRange max below it":     {msg: pod + `[maximum memory usage per Container is 20Mi, but limit is 64Mi, maximum memory usage per Container is 20Mi, but limit is 32Mi]`, want: true},
		"LimitRange ratio it breaks":  {msg: pod + `cpu max limit to request ratio per Container is 4, but provided ratio is 5.000000`, want: true},
		"LimitRange the barrier fits": {msg: pod + `minimum cpu usage per Container is 5m, but request is 1m`},
		"LimitRange max it fits":      {msg: pod + `maximum cpu usage per Container is 1, but limit is 2`},
		"LimitRange, no Job":          {msg: pod + `minimum cpu usage per Container is 100m, but request is 10m`, noJob: true},
		"LimitRange, unknown Job":     {msg: pod + `minimum cpu usage per Container is 100m, but request is 10m`, other: true},
		"a per-pod PVC":               {msg: pod + `persistentvolumeclaim "ckpt-a-x-0-0" is being deleted`},
		"a claim":                     {msg: pod + `resourceclaim "a-x-0-gpu": not allowed`},
		"a user's container":          {msg: pod + `violates PodSecurity "restricted:latest": allowPrivilegeEscalation != false (container "work" must set securityContext.allowPrivilegeEscalation=false)`},
		"a longer container name":     {msg: pod + `failed quota: q: must specify limits.cpu for: jobset-addons-start-barrier-2`},
		"no barrier":                  {msg: pod + `failed quota: q: must specify limits.cpu for: jobset-addons-start-barrier`, noBarr: true},
		"other":                       {msg: `Error creating: Internal error occurred: etcd timeout`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			js, j := barrier, job
			if tc.noBarr {
				js = plain
			}
			if tc.noJob {
				j = nil
			}
			if tc.other {
				j = other
			}
			if _, got := PodsRefused(js, j, tc.msg); got != tc.want {
				t.Errorf("PodsRefused = %v, want %v", got, tc.want)
			}
		})
	}
}
