package controller

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/pkg/addon/addontest"
	"github.com/jobset-addons/jobset-addons/pkg/addon/checks/podgroups"
	"github.com/jobset-addons/jobset-addons/pkg/addon/jobsets"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// twoStages is a JobSet of ReplicatedJobs init and main, two Jobs each; main depends on init's
// completion upstream when upstream is true.
func twoStages(annotations map[string]string, upstream bool) *addontest.JobSetWrapper {
	main := addontest.ReplicatedJob("main").Replicas(2)
	if upstream {
		main.DependsOn("init")
	}
	return addontest.JobSet("ns", "js").UID("uid").Annotations(annotations).ReplicatedJobs(addontest.ReplicatedJob("init").Replicas(2), main)
}

func TestWanted(t *testing.T) {
	inOrder := map[string]string{contract.SchedulerAnnotationKey: "volcano", contract.ExecutionPolicyAnnotationKey: "InOrder"}
	released := func(attempt int) map[string]string {
		a := map[string]string{}
		for k, v := range inOrder {
			a[k] = v
		}
		a[contract.ReleasedAnnotationKey] = contract.Released{RestartAttempt: int32(attempt), ReplicatedJobs: []string{"main"}}.String()
		return a
	}
	cases := map[string]struct {
		js       *jobsetv1alpha2.JobSet
		restarts int32
		finished bool
		jobs     func(js *jobsetv1alpha2.JobSet) []client.Object
		want     []string
		early    []string // not wanted yet, but kept a while (keptWhileEarly)
	}{
		"not sequenced: the one gang": {
			js:   twoStages(nil, false).UID("").Obj(),
			want: []string{"js"},
		},
		"finished: none": {js: twoStages(released(0), false).Obj(), finished: true, want: nil},
		"gated stage 1 not released yet": {
			js: twoStages(inOrder, false).Obj(),
			jobs: func(js *jobsetv1alpha2.JobSet) []client.Object {
				return []client.Object{addontest.Job(js, "init", 0).Obj(), addontest.Job(js, "main", 0).Obj()}
			},
			want:  []string{"js-stage-0"},
			early: []string{"js-stage-1"},
		},
		"released, init Complete: stage 0 done, stage 1 runs": {
			js: twoStages(released(0), false).Obj(),
			jobs: func(js *jobsetv1alpha2.JobSet) []client.Object {
				return []client.Object{addontest.Job(js, "init", 0).Complete().Obj(), addontest.Job(js, "init", 1).Complete().Obj(), addontest.Job(js, "main", 0).Obj()}
			},
			want: []string{"js-stage-1"},
		},
		"released in an earlier attempt: not for this one": {
			js: twoStages(released(0), false).Obj(), restarts: 1,
			jobs: func(js *jobsetv1alpha2.JobSet) []client.Object {
				return []client.Object{
					addontest.Job(js, "init", 0).Complete().Obj(), addontest.Job(js, "init", 1).Complete().Obj(),
					addontest.Job(js, "init", 0).Attempt(1).Name("js-init-0-r1").Obj(),
				}
			},
			want:  []string{"js-stage-0"},
			early: []string{"js-stage-1"},
		},
		"upstream dependsOn, main's Jobs not made yet": {
			js: twoStages(map[string]string{contract.SchedulerAnnotationKey: "volcano"}, true).Obj(),
			jobs: func(js *jobsetv1alpha2.JobSet) []client.Object {
				return []client.Object{addontest.Job(js, "init", 0).Obj()}
			},
			want:  []string{"js-stage-0"},
			early: []string{"js-stage-1"},
		},
		"upstream dependsOn, upstream made main's Jobs": {
			js: twoStages(map[string]string{contract.SchedulerAnnotationKey: "volcano"}, true).Obj(),
			jobs: func(js *jobsetv1alpha2.JobSet) []client.Object {
				return []client.Object{addontest.Job(js, "init", 0).Complete().Obj(), addontest.Job(js, "init", 1).Obj(), addontest.Job(js, "main", 0).Obj()}
			},
			want: []string{"js-stage-0", "js-stage-1"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			js := tc.js
			js.Status.Restarts = tc.restarts
			if tc.finished {
				js.Status.Conditions = []metav1.Condition{{Type: string(jobsetv1alpha2.JobSetCompleted), Status: metav1.ConditionTrue}}
			}
			scheme := runtime.NewScheme()
			_ = batchv1.AddToScheme(scheme)
			b := fake.NewClientBuilder().WithScheme(scheme).WithIndex(&batchv1.Job{}, JobSetNameIndex, jobsets.IndexByName)
			if tc.jobs != nil {
				b = b.WithObjects(tc.jobs(js)...)
			}
			r := &Reconciler{Client: b.Build()}
			gangs, errs := podgroups.Gangs(js, podgroups.Settings{Scheduler: contract.SchedulerVolcano})
			if len(errs) > 0 {
				t.Fatal(errs)
			}
			want, why, early, err := r.wanted(context.Background(), js, gangs)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, g := range want {
				got = append(got, g.Name)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("wanted (-want +got):\n%s\nwhy not the others: %v", diff, why)
			}
			if diff := cmp.Diff(tc.early, sets.List(early)); diff != "" && (len(tc.early) > 0 || early.Len() > 0) {
				t.Errorf("early (-want +got):\n%s", diff)
			}
			for _, g := range gangs {
				if !slices.Contains(got, g.Name) && why[g.Name] == "" {
					t.Errorf("%s not wanted, and no reason given", g.Name)
				}
			}
		})
	}
}

// TestKeptWhileEarly: a gang object of a stage whose Jobs the cache does not show yet is kept
// for EarlyGrace from its creation, then deleted as any unwanted one; any other unwanted one is
// deleted at once.
func TestKeptWhileEarly(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	r := &Reconciler{Clock: clocktesting.NewFakeClock(now)}
	w := wants{early: sets.New("js-stage-1")}
	pg := func(name string, age time.Duration) client.Object {
		return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(now.Add(-age))}}
	}
	for _, tc := range []struct {
		obj  client.Object
		kept bool
	}{
		{pg("js-stage-1", time.Second), true},
		{pg("js-stage-1", EarlyGrace-time.Second), true},
		{pg("js-stage-1", EarlyGrace), false},
		{pg("js-stage-2", time.Second), false},
	} {
		if got := r.keptWhileEarly(w, tc.obj); got != tc.kept {
			t.Errorf("%s created %v ago: kept %v, want %v", tc.obj.GetName(), now.Sub(tc.obj.GetCreationTimestamp().Time), got, tc.kept)
		}
	}
}
