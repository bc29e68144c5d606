package controller

import (
	"context"
	"slices"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/controllers/podgroups/internal/gang"
	"github.com/jobset-addons/jobset-addons/pkg/addon/jobsets"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

func twoStages(annotations map[string]string, upstream bool) *jobsetv1alpha2.JobSet {
	js := &jobsetv1alpha2.JobSet{ObjectMeta: metav1.ObjectMeta{Name: "js", Namespace: "ns", UID: "uid", Annotations: annotations}}
	for _, name := range []string{"init", "main"} {
		js.Spec.ReplicatedJobs = append(js.Spec.ReplicatedJobs, jobsetv1alpha2.ReplicatedJob{Name: name, Replicas: 2,
			Template: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}}}}}}})
	}
	if upstream {
		js.Spec.ReplicatedJobs[1].DependsOn = []jobsetv1alpha2.DependsOn{{Name: "init", Status: jobsetv1alpha2.DependencyComplete}}
	}
	return js
}

// job is Job i of the ReplicatedJob in the attempt, Complete or not.
func job(js *jobsetv1alpha2.JobSet, rj string, i, attempt int, complete bool) *batchv1.Job {
	j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{
		Namespace: js.Namespace, Name: js.Name + "-" + rj + "-" + strconv.Itoa(i) + "-a" + strconv.Itoa(attempt),
		Labels: map[string]string{contract.JobSetNameLabelKey: js.Name, contract.ReplicatedJobNameLabelKey: rj, contract.RestartAttemptLabelKey: strconv.Itoa(attempt)},
	}}
	if complete {
		j.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobComplete, Status: corev1.ConditionTrue}}
	}
	return j
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
			js:   &jobsetv1alpha2.JobSet{ObjectMeta: metav1.ObjectMeta{Name: "js", Namespace: "ns"}, Spec: jobsetv1alpha2.JobSetSpec{ReplicatedJobs: twoStages(nil, false).Spec.ReplicatedJobs}},
			want: []string{"js"},
		},
		"finished: none": {js: twoStages(released(0), false), finished: true, want: nil},
		"gated stage 1 not released yet": {
			js: twoStages(inOrder, false),
			jobs: func(js *jobsetv1alpha2.JobSet) []client.Object {
				return []client.Object{job(js, "init", 0, 0, false), job(js, "main", 0, 0, false)}
			},
			want: []string{"js-stage-0"},
		},
		"released, init Complete: stage 0 done, stage 1 runs": {
			js: twoStages(released(0), false),
			jobs: func(js *jobsetv1alpha2.JobSet) []client.Object {
				return []client.Object{job(js, "init", 0, 0, true), job(js, "init", 1, 0, true), job(js, "main", 0, 0, false)}
			},
			want: []string{"js-stage-1"},
		},
		"released in an earlier attempt: not for this one": {
			js: twoStages(released(0), false), restarts: 1,
			jobs: func(js *jobsetv1alpha2.JobSet) []client.Object {
				return []client.Object{job(js, "init", 0, 0, true), job(js, "init", 1, 0, true), job(js, "init", 0, 1, false)}
			},
			want: []string{"js-stage-0"},
		},
		"upstream dependsOn, main's Jobs not made yet": {
			js:   twoStages(map[string]string{contract.SchedulerAnnotationKey: "volcano"}, true),
			jobs: func(js *jobsetv1alpha2.JobSet) []client.Object { return []client.Object{job(js, "init", 0, 0, false)} },
			want: []string{"js-stage-0"},
		},
		"upstream dependsOn, upstream made main's Jobs": {
			js: twoStages(map[string]string{contract.SchedulerAnnotationKey: "volcano"}, true),
			jobs: func(js *jobsetv1alpha2.JobSet) []client.Object {
				return []client.Object{job(js, "init", 0, 0, true), job(js, "init", 1, 0, false), job(js, "main", 0, 0, false)}
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
			gangs, errs := gang.Gangs(js, gang.Settings{Scheduler: contract.SchedulerVolcano})
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
