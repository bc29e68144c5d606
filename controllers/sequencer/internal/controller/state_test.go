package controller

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/pkg/addon/addontest"
	"github.com/jobset-addons/jobset-addons/pkg/addon/checks/sequencer"
	"github.com/jobset-addons/jobset-addons/pkg/addon/jobsets"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

func TestDecide(t *testing.T) {
	chain := addontest.JobSet("ns", "chain").UID("chain-uid").InOrder().ReplicatedJobs(
		addontest.ReplicatedJob("a").Replicas(2),
		addontest.ReplicatedJob("b"),
		addontest.ReplicatedJob("c"),
	).Obj()
	ready := addontest.JobSet("ns", "ready").UID("ready-uid").InOrder().Annotation(contract.WaitForAnnotationKey, "Ready").
		ReplicatedJobs(addontest.ReplicatedJob("a").Replicas(2), addontest.ReplicatedJob("b")).Obj()
	fanIn := addontest.JobSet("ns", "fanin").UID("fanin-uid").ReplicatedJobs(
		addontest.ReplicatedJob("data"),
		addontest.ReplicatedJob("model"),
		addontest.ReplicatedJob("node").Replicas(2).DependsOnAnnotation("- name: data\n- name: model\n  status: Ready\n"),
	).Obj()
	restarted := addontest.JobSet("ns", "chain").UID("chain-uid").InOrder().ReplicatedJobs(
		addontest.ReplicatedJob("a").Replicas(2),
		addontest.ReplicatedJob("b"),
		addontest.ReplicatedJob("c"),
	).Restarts(1).Obj()
	jobs := func(js ...*addontest.JobWrapper) []batchv1.Job {
		var out []batchv1.Job
		for _, j := range js {
			out = append(out, *j.Obj())
		}
		return out
	}
	cases := map[string]struct {
		js           *jobsetv1alpha2.JobSet
		jobs         []batchv1.Job
		prev         contract.Released
		wantAttempt  int32
		wantReleased []string
		wantNewly    []int
	}{
		"nothing finished": {
			js:           chain,
			jobs:         jobs(addontest.Job(chain, "a", 0), addontest.Job(chain, "a", 1), addontest.Job(chain, "b", 0)),
			wantReleased: []string{},
		},
		"one of two predecessor Jobs Complete": {
			js:           chain,
			jobs:         jobs(addontest.Job(chain, "a", 0).Complete(), addontest.Job(chain, "a", 1), addontest.Job(chain, "b", 0)),
			wantReleased: []string{},
		},
		"every predecessor Job Complete releases the next stage only": {
			js:           chain,
			jobs:         jobs(addontest.Job(chain, "a", 0).Complete(), addontest.Job(chain, "a", 1).Complete(), addontest.Job(chain, "b", 0), addontest.Job(chain, "c", 0)),
			wantReleased: []string{"b"},
			wantNewly:    []int{1},
		},
		"ready is not Complete": {
			js:           chain,
			jobs:         jobs(addontest.Job(chain, "a", 0).Ready(1), addontest.Job(chain, "a", 1).Ready(1)),
			wantReleased: []string{},
		},
		"Ready mode: ready and Complete Jobs equal replicas": {
			js:           ready,
			jobs:         jobs(addontest.Job(ready, "a", 0).Ready(1), addontest.Job(ready, "a", 1).Complete()),
			wantReleased: []string{"b"},
			wantNewly:    []int{1},
		},
		"Ready mode: a failed Job is not ready": {
			js:           ready,
			jobs:         jobs(addontest.Job(ready, "a", 0).Ready(1), addontest.Job(ready, "a", 1).Finished(batchv1.JobFailed)),
			wantReleased: []string{},
		},
		"fan-in: one of two predecessors": {
			js:           fanIn,
			jobs:         jobs(addontest.Job(fanIn, "data", 0).Complete(), addontest.Job(fanIn, "model", 0)),
			wantReleased: []string{},
		},
		"fan-in: Complete and Ready": {
			js:           fanIn,
			jobs:         jobs(addontest.Job(fanIn, "data", 0).Complete(), addontest.Job(fanIn, "model", 0).Ready(1)),
			wantReleased: []string{"node"},
			wantNewly:    []int{1},
		},
		"a release of the attempt is kept when its predecessor is no longer ready": {
			js:           ready,
			jobs:         jobs(addontest.Job(ready, "a", 0), addontest.Job(ready, "a", 1)),
			prev:         contract.Released{ReplicatedJobs: []string{"b"}},
			wantReleased: []string{"b"},
		},
		"after a restart, Jobs of the earlier attempt do not count and its releases are dropped": {
			js: restarted,
			jobs: jobs(addontest.Job(restarted, "a", 0).Complete(), addontest.Job(restarted, "a", 1).Complete(),
				addontest.Job(restarted, "a", 0).Attempt(1), addontest.Job(restarted, "a", 1).Attempt(1).Complete()),
			prev:         contract.Released{ReplicatedJobs: []string{"b", "c"}},
			wantAttempt:  1,
			wantReleased: []string{},
		},
		"the attempt is taken from Jobs ahead of the JobSet's status": {
			js: chain,
			jobs: jobs(addontest.Job(chain, "a", 0).Complete(), addontest.Job(chain, "a", 1).Complete(),
				addontest.Job(chain, "a", 0).Attempt(1)),
			prev:         contract.Released{ReplicatedJobs: []string{"b"}},
			wantAttempt:  1,
			wantReleased: []string{},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			stages, errs := sequencer.Stages(tc.js)
			if len(errs) > 0 {
				t.Fatal(errs.ToAggregate())
			}
			attempt := jobsets.CurrentAttempt(tc.js, tc.jobs)
			if attempt != tc.wantAttempt {
				t.Errorf("attempt %d, want %d", attempt, tc.wantAttempt)
			}
			d := decide(tc.js, stages, tc.prev, tally(tc.jobs, attempt), attempt)
			if diff := cmp.Diff(contract.Released{RestartAttempt: tc.wantAttempt, ReplicatedJobs: tc.wantReleased}, d.released); diff != "" {
				t.Errorf("released (-want +got):\n%s", diff)
			}
			var newly []int
			for _, s := range d.newly {
				newly = append(newly, s.Index)
			}
			if diff := cmp.Diff(tc.wantNewly, newly); diff != "" {
				t.Errorf("newly released stages (-want +got):\n%s", diff)
			}
		})
	}
}

// TestFirstJob: a StageReleased Event relates to a Job of the ReplicatedJob it released (so that
// the releases of two ReplicatedJobs are two series of Events, not one), and to nothing — a nil
// interface, not a typed nil — before its Jobs exist.
func TestFirstJob(t *testing.T) {
	js := addontest.JobSet("ns", "js").Obj()
	jobs := []batchv1.Job{*addontest.Job(js, "b", 1).Obj(), *addontest.Job(js, "a", 0).Obj(), *addontest.Job(js, "b", 0).Obj()}
	if got := firstJob(jobs, "b"); got == nil || got.(*batchv1.Job).Name != "js-b-0" {
		t.Errorf("firstJob(b) = %v, want js-b-0", got)
	}
	if got := firstJob(jobs, "c"); got != nil {
		t.Errorf("firstJob(c) = %#v, want a nil interface", got)
	}
}
