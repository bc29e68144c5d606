package controller

import (
	"context"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
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
			want: []string{"js-stage-0"},
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
			want: []string{"js-stage-0"},
		},
		"upstream dependsOn, main's Jobs not made yet": {
			js: twoStages(map[string]string{contract.SchedulerAnnotationKey: "volcano"}, true).Obj(),
			jobs: func(js *jobsetv1alpha2.JobSet) []client.Object {
				return []client.Object{addontest.Job(js, "init", 0).Obj()}
			},
			want: []string{"js-stage-0"},
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
			want, why, err := r.wanted(context.Background(), js, gangs)
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
			for _, g := range gangs {
				if !slices.Contains(got, g.Name) && why[g.Name] == "" {
					t.Errorf("%s not wanted, and no reason given", g.Name)
				}
			}
		})
	}
}
