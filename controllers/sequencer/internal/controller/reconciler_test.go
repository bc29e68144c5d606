package controller

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/pkg/addon/addontest"
	"github.com/jobset-addons/jobset-addons/pkg/addon/checks/sequencer"
	"github.com/jobset-addons/jobset-addons/pkg/addon/jobsets"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// gatedPod is pod index of ReplicatedJob rj of js in restart attempt attempt, named
// <js>-<rj>-<index>-r<attempt>, held by the sequencer's gate and by another's, controlled by
// its Job (memberJob).
func gatedPod(js *jobsetv1alpha2.JobSet, rj string, index, attempt int) *corev1.Pod {
	name := fmt.Sprintf("%s-%s-%d-r%d", js.Name, rj, index, attempt)
	return addontest.Pod(js.Namespace, js.Name, rj, index, 0).Name(name).UID(name).Attempt(attempt).
		ControlledBy(memberJob(js, rj, index, attempt)).
		Label(contract.SequencerGatedLabelKey, contract.EnabledValue).
		Gate("other.example.com/gate").Gate(contract.SequencerSchedulingGateValue).Obj()
}

// memberJob is Job index of ReplicatedJob rj of js in restart attempt attempt, as JobSet's
// controller makes it (its UID its name and attempt).
func memberJob(js *jobsetv1alpha2.JobSet, rj string, index, attempt int) *batchv1.Job {
	j := addontest.Job(js, rj, index).ControlledBy(js).Attempt(attempt).Obj()
	j.UID = types.UID(fmt.Sprintf("%s-r%d", j.Name, attempt))
	return j
}

// withMemberJobs adds, to objs, the Job of each pod that objs do not hold yet (by name), and
// gives each Job without one a UID (its name).
func withMemberJobs(js *jobsetv1alpha2.JobSet, objs []client.Object) []client.Object {
	jobs := map[string]bool{}
	for _, o := range objs {
		if j, ok := o.(*batchv1.Job); ok {
			jobs[j.Name] = true
			if j.UID == "" {
				j.UID = types.UID(j.Name)
			}
		}
	}
	for _, o := range objs {
		p, ok := o.(*corev1.Pod)
		if !ok {
			continue
		}
		rj, index := p.Labels[contract.ReplicatedJobNameLabelKey], p.Labels[contract.JobIndexLabelKey]
		if name := js.Name + "-" + rj + "-" + index; !jobs[name] {
			jobs[name] = true
			i, _ := strconv.Atoi(index)
			objs = append(objs, memberJob(js, rj, i, int(jobsets.AttemptOf(p.Labels))))
		}
	}
	return objs
}

func TestReconcile(t *testing.T) {
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = jobsetv1alpha2.AddToScheme(scheme)

	type want struct {
		ungated  []string // pods whose sequencer gate is gone
		released string   // the released annotation ("" = absent)
		events   []string // event reasons
	}
	newJS := func() *addontest.JobSetWrapper {
		return addontest.JobSet("ns", "train").UID("train-uid").InOrder().ReplicatedJobs(
			addontest.ReplicatedJob("init"),
			addontest.ReplicatedJob("node").Replicas(2),
			addontest.ReplicatedJob("eval"),
		)
	}
	cases := map[string]struct {
		js   *jobsetv1alpha2.JobSet
		jobs func(js *jobsetv1alpha2.JobSet) []*batchv1.Job
		pods func(js *jobsetv1alpha2.JobSet) []*corev1.Pod
		want want
	}{
		"predecessor running: nothing released": {
			js: newJS().Obj(),
			jobs: func(js *jobsetv1alpha2.JobSet) []*batchv1.Job {
				return []*batchv1.Job{addontest.Job(js, "init", 0).ControlledBy(js).Ready(1).Obj()}
			},
			pods: func(js *jobsetv1alpha2.JobSet) []*corev1.Pod {
				return []*corev1.Pod{gatedPod(js, "node", 0, 0), gatedPod(js, "node", 1, 0)}
			},
		},
		"predecessor Complete: the node pods of the attempt are released, eval stays": {
			js: newJS().Obj(),
			jobs: func(js *jobsetv1alpha2.JobSet) []*batchv1.Job {
				return []*batchv1.Job{addontest.Job(js, "init", 0).ControlledBy(js).Complete().Obj()}
			},
			pods: func(js *jobsetv1alpha2.JobSet) []*corev1.Pod {
				return []*corev1.Pod{gatedPod(js, "node", 0, 0), gatedPod(js, "node", 1, 0), gatedPod(js, "eval", 0, 0)}
			},
			want: want{
				ungated:  []string{"train-node-0-r0", "train-node-1-r0"},
				released: `{"restartAttempt":0,"replicatedJobs":["node"]}`,
				events:   []string{ReasonStageReleased},
			},
		},
		"a forged pod with the JobSet's labels, no Job of it its controller: never released": {
			js: newJS().Obj(),
			jobs: func(js *jobsetv1alpha2.JobSet) []*batchv1.Job {
				return []*batchv1.Job{addontest.Job(js, "init", 0).ControlledBy(js).Complete().Obj()}
			},
			pods: func(js *jobsetv1alpha2.JobSet) []*corev1.Pod {
				forged := gatedPod(js, "node", 1, 0)
				forged.Name, forged.OwnerReferences = "forged", nil
				return []*corev1.Pod{gatedPod(js, "node", 0, 0), forged}
			},
			want: want{
				ungated:  []string{"train-node-0-r0"},
				released: `{"restartAttempt":0,"replicatedJobs":["node"]}`,
				events:   []string{ReasonStageReleased},
			},
		},
		"suspended: nothing released": {
			js: newJS().Suspend(true).Obj(),
			jobs: func(js *jobsetv1alpha2.JobSet) []*batchv1.Job {
				return []*batchv1.Job{addontest.Job(js, "init", 0).ControlledBy(js).Complete().Obj()}
			},
			pods: func(js *jobsetv1alpha2.JobSet) []*corev1.Pod { return []*corev1.Pod{gatedPod(js, "node", 0, 0)} },
		},
		"suspended after a release (Kueue preempted it): the release is withdrawn, nothing released": {
			js: newJS().Suspend(true).Annotation(contract.ReleasedAnnotationKey, `{"restartAttempt":0,"replicatedJobs":["node"]}`).Obj(),
			jobs: func(js *jobsetv1alpha2.JobSet) []*batchv1.Job {
				return []*batchv1.Job{addontest.Job(js, "init", 0).ControlledBy(js).Complete().Obj()}
			},
			pods: func(js *jobsetv1alpha2.JobSet) []*corev1.Pod { return []*corev1.Pod{gatedPod(js, "node", 0, 0)} },
			want: want{released: `{"restartAttempt":0,"replicatedJobs":[]}`, events: []string{ReasonReleasesWithdrawn}},
		},
		"suspended, releases withdrawn already: nothing written, nothing told": {
			js: newJS().Suspend(true).Annotation(contract.ReleasedAnnotationKey, `{"restartAttempt":0,"replicatedJobs":[]}`).Obj(),
			jobs: func(js *jobsetv1alpha2.JobSet) []*batchv1.Job {
				return []*batchv1.Job{addontest.Job(js, "init", 0).ControlledBy(js).Complete().Obj()}
			},
			pods: func(js *jobsetv1alpha2.JobSet) []*corev1.Pod { return []*corev1.Pod{gatedPod(js, "node", 0, 0)} },
			want: want{released: `{"restartAttempt":0,"replicatedJobs":[]}`},
		},
		"resumed after a withdrawal, predecessor Ready only: held until it holds again": {
			js: newJS().Annotation(contract.WaitForAnnotationKey, "Ready").Annotation(contract.ReleasedAnnotationKey, `{"restartAttempt":0,"replicatedJobs":[]}`).Obj(),
			jobs: func(js *jobsetv1alpha2.JobSet) []*batchv1.Job {
				return []*batchv1.Job{addontest.Job(js, "init", 0).ControlledBy(js).Obj()}
			},
			pods: func(js *jobsetv1alpha2.JobSet) []*corev1.Pod { return []*corev1.Pod{gatedPod(js, "node", 0, 0)} },
			want: want{released: `{"restartAttempt":0,"replicatedJobs":[]}`},
		},
		"resumed after a withdrawal, predecessor Complete: released again and told again": {
			js: newJS().Annotation(contract.ReleasedAnnotationKey, `{"restartAttempt":0,"replicatedJobs":[]}`).Obj(),
			jobs: func(js *jobsetv1alpha2.JobSet) []*batchv1.Job {
				return []*batchv1.Job{addontest.Job(js, "init", 0).ControlledBy(js).Complete().Obj()}
			},
			pods: func(js *jobsetv1alpha2.JobSet) []*corev1.Pod { return []*corev1.Pod{gatedPod(js, "node", 0, 0)} },
			want: want{
				ungated:  []string{"train-node-0-r0"},
				released: `{"restartAttempt":0,"replicatedJobs":["node"]}`,
				events:   []string{ReasonStageReleased},
			},
		},
		"released earlier in the attempt: a new pod is released, no second event": {
			js: newJS().Annotation(contract.ReleasedAnnotationKey, `{"restartAttempt":0,"replicatedJobs":["node"]}`).Obj(),
			jobs: func(js *jobsetv1alpha2.JobSet) []*batchv1.Job {
				return []*batchv1.Job{addontest.Job(js, "init", 0).ControlledBy(js).Complete().Obj()}
			},
			pods: func(js *jobsetv1alpha2.JobSet) []*corev1.Pod { return []*corev1.Pod{gatedPod(js, "node", 1, 0)} },
			want: want{
				ungated:  []string{"train-node-1-r0"},
				released: `{"restartAttempt":0,"replicatedJobs":["node"]}`,
			},
		},
		"restarted: the earlier attempt's releases are dropped, its pods left alone": {
			js: newJS().Restarts(1).Annotation(contract.ReleasedAnnotationKey, `{"restartAttempt":0,"replicatedJobs":["node"]}`).Obj(),
			jobs: func(js *jobsetv1alpha2.JobSet) []*batchv1.Job {
				return []*batchv1.Job{
					addontest.Job(js, "init", 0).ControlledBy(js).Complete().Obj(),
					addontest.Job(js, "init", 0).ControlledBy(js).Attempt(1).Name("train-init-0-r1").Obj(),
				}
			},
			pods: func(js *jobsetv1alpha2.JobSet) []*corev1.Pod {
				return []*corev1.Pod{gatedPod(js, "node", 0, 0), gatedPod(js, "node", 0, 1)}
			},
			want: want{released: `{"restartAttempt":1,"replicatedJobs":[]}`},
		},
		"created without the webhook: nothing released, a warning": {
			js: newJS().Obj(),
			jobs: func(js *jobsetv1alpha2.JobSet) []*batchv1.Job {
				return []*batchv1.Job{addontest.Job(js, "init", 0).ControlledBy(js).Complete().Obj()}
			},
			pods: func(js *jobsetv1alpha2.JobSet) []*corev1.Pod { return []*corev1.Pod{gatedPod(js, "node", 0, 0)} },
			want: want{events: []string{ReasonNotAdmitted}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			js := tc.js
			if !strings.Contains(name, "without the webhook") {
				stages, _ := sequencer.Stages(js)
				sequencer.Inject(js, stages)
			}
			objs := []client.Object{js}
			for _, j := range tc.jobs(js) {
				objs = append(objs, j)
			}
			for _, p := range tc.pods(js) {
				objs = append(objs, p)
			}
			c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(withMemberJobs(js, objs)...).
				WithIndex(&batchv1.Job{}, JobSetNameIndex, ByJobSet).WithIndex(&corev1.Pod{}, JobSetNameIndex, ByJobSet).Build()
			rec := events.NewFakeRecorder(10)
			r := &Reconciler{Client: c, Recorder: rec, Clock: clocktesting.NewFakeClock(time.Unix(1_800_000_000, 0)), Workers: 2}
			if _, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(js)}); err != nil {
				t.Fatalf("Reconcile: %v", err)
			}

			var pods corev1.PodList
			if err := c.List(context.Background(), &pods); err != nil {
				t.Fatal(err)
			}
			var ungated []string
			for _, p := range pods.Items {
				if !sequencer.HasGate(p.Spec.SchedulingGates) {
					ungated = append(ungated, p.Name)
					if len(p.Spec.SchedulingGates) != 1 {
						t.Errorf("pod %s: gates %v, want the other gate kept", p.Name, p.Spec.SchedulingGates)
					}
					// Released, it leaves the controller's cache of gated pods.
					if _, ok := p.Labels[contract.SequencerGatedLabelKey]; ok {
						t.Errorf("released pod %s keeps the label %s", p.Name, contract.SequencerGatedLabelKey)
					}
				} else if p.Labels[contract.SequencerGatedLabelKey] != contract.EnabledValue {
					t.Errorf("gated pod %s lost the label %s: %v", p.Name, contract.SequencerGatedLabelKey, p.Labels)
				}
				if p.Labels[contract.JobSetNameLabelKey] == "" {
					t.Errorf("pod %s lost its other labels: %v", p.Name, p.Labels)
				}
			}
			if diff := cmp.Diff(tc.want.ungated, ungated); diff != "" {
				t.Errorf("released pods (-want +got):\n%s", diff)
			}
			var got jobsetv1alpha2.JobSet
			if err := c.Get(context.Background(), client.ObjectKeyFromObject(js), &got); err != nil {
				t.Fatal(err)
			}
			if v := got.Annotations[contract.ReleasedAnnotationKey]; v != tc.want.released {
				t.Errorf("released annotation %q, want %q", v, tc.want.released)
			}
			if got.Annotations[contract.ExecutionPolicyAnnotationKey] != "InOrder" {
				t.Errorf("the user's annotation was lost: %v", got.Annotations)
			}
			close(rec.Events)
			var reasons []string
			for e := range rec.Events {
				reasons = append(reasons, strings.Fields(e)[1])
			}
			if diff := cmp.Diff(tc.want.events, reasons); diff != "" {
				t.Errorf("event reasons (-want +got):\n%s", diff)
			}
		})
	}
}

// initThenNode is an admitted JobSet of two stages, init then node, one pod each, and node's pod.
func initThenNode() (*jobsetv1alpha2.JobSet, *corev1.Pod) {
	js := addontest.JobSet("ns", "train").UID("train-uid").InOrder().ReplicatedJobs(
		addontest.ReplicatedJob("init"),
		addontest.ReplicatedJob("node"),
	).Obj()
	stages, _ := sequencer.Stages(js)
	sequencer.Inject(js, stages)
	return js, gatedPod(js, "node", 0, 0)
}

// initThenNodeClient is a fake client holding js, its init Job Complete, and node's pod.
func initThenNodeClient(js *jobsetv1alpha2.JobSet, pod *corev1.Pod) *fake.ClientBuilder {
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = jobsetv1alpha2.AddToScheme(scheme)
	return fake.NewClientBuilder().WithScheme(scheme).
		WithObjects(withMemberJobs(js, []client.Object{js, addontest.Job(js, "init", 0).ControlledBy(js).Complete().Obj(), pod})...).
		WithIndex(&batchv1.Job{}, JobSetNameIndex, ByJobSet).WithIndex(&corev1.Pod{}, JobSetNameIndex, ByJobSet)
}

// TestReconcileStaleCache: a second reconcile that reads the JobSet as it was before the first
// wrote the released annotation (the cache lags) neither tells the release again nor rewrites.
func TestReconcileStaleCache(t *testing.T) {
	js, pod := initThenNode()
	stale := js.DeepCopy()
	c := initThenNodeClient(js, pod).Build()
	patches := 0
	staleReader := interceptor.Funcs{
		Get: func(ctx context.Context, cl client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if got, ok := obj.(*jobsetv1alpha2.JobSet); ok {
				stale.DeepCopyInto(got)
				return nil
			}
			return cl.Get(ctx, key, obj, opts...)
		},
		Patch: func(ctx context.Context, cl client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			if _, ok := obj.(*jobsetv1alpha2.JobSet); ok {
				patches++
			}
			return cl.Patch(ctx, obj, patch, opts...)
		},
	}
	rec := events.NewFakeRecorder(10)
	r := &Reconciler{Client: interceptor.NewClient(c, staleReader), Recorder: rec, Clock: clocktesting.NewFakeClock(time.Unix(1_800_000_000, 0)), Workers: 2}
	for range 2 {
		if _, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(js)}); err != nil {
			t.Fatalf("Reconcile: %v", err)
		}
	}
	close(rec.Events)
	if n := len(rec.Events); n != 1 {
		t.Errorf("%d events, want 1", n)
	}
	if patches != 1 {
		t.Errorf("%d JobSet patches, want 1", patches)
	}
}

// TestSlowPatchNotRepeated: a pod's release that the apiserver answers slowly (6 s) is not
// patched again by a reconcile whose cache still shows the gate (addon.Changed).
func TestSlowPatchNotRepeated(t *testing.T) {
	js, pod := initThenNode()
	c := initThenNodeClient(js, pod).Build()
	clk := clocktesting.NewFakeClock(time.Unix(1_800_000_000, 0))
	podPatches := 0
	slowAndStale := interceptor.Funcs{
		// The cache still shows the pod gated.
		List: func(ctx context.Context, cl client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			if pods, ok := list.(*corev1.PodList); ok {
				pods.Items = []corev1.Pod{*pod.DeepCopy()}
				return nil
			}
			return cl.List(ctx, list, opts...)
		},
		// The apiserver answers a pod's patch after 6 s.
		Patch: func(ctx context.Context, cl client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			if _, ok := obj.(*corev1.Pod); ok {
				podPatches++
				clk.Step(6 * time.Second)
			}
			return cl.Patch(ctx, obj, patch, opts...)
		},
	}
	r := &Reconciler{Client: interceptor.NewClient(c, slowAndStale), Recorder: events.NewFakeRecorder(10), Clock: clk, Workers: 2}
	for range 2 {
		if _, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(js)}); err != nil {
			t.Fatalf("Reconcile: %v", err)
		}
		// The cache shows the release 6 s after its answer, too.
		clk.Step(6 * time.Second)
	}
	if podPatches != 1 {
		t.Errorf("%d pod patches, want 1", podPatches)
	}
}
