package podgroups_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	volcanov1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/jobset-addons/jobset-addons/e2e/framework"
	"github.com/jobset-addons/jobset-addons/e2e/testbed"
	"github.com/jobset-addons/jobset-addons/pkg/addon/jobsets"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// TestStages: a JobSet sequenced InOrder (by the sequencer) gets one PodGroup per stage
// (Volcano's; then Kubernetes' own, under one Workload holding both stages' templates from the
// start). Stage 1's PodGroup appears only once stage 0 completed (its pods were held back until
// then, so a PodGroup earlier would only hold queue), stage 0's goes once stage 0 finished, the
// stages run one after another without deadlock, and none is left when the JobSet completes
// (nor the Workload).
func TestStages(t *testing.T) {
	for _, s := range []contract.Scheduler{contract.SchedulerVolcano, contract.SchedulerKubernetes} {
		testStages(t, s)
	}
}

func testStages(t *testing.T, s contract.Scheduler) {
	f := framework.NamespacedFeature(fmt.Sprintf("%s: one PodGroup per stage, each for as long as its stage runs", s), "stages", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		if s == contract.SchedulerKubernetes {
			requireWorkloadAPI(t, cfg)
		}
		c := framework.Client(t, cfg)
		ns := framework.NamespaceFrom(ctx)
		js := newJobSet(ns, "train", s).
			InOrder().
			ReplicatedJobs(replicated("init", 1, 2, "3s"), replicated("main", 2, 2, "3s")).Obj()
		framework.CreateAll(ctx, t, c, js)
		stage0, stage1 := "train-stage-0", "train-stage-1"
		checkPodGroup(ctx, t, c, ns, stage0, s, 2)
		if s == contract.SchedulerKubernetes {
			// Every stage's template from the start: the API adds none later.
			wl := workload(ctx, t, c, ns, "train")
			var got []string
			for _, tp := range wl.Spec.PodGroupTemplates {
				got = append(got, fmt.Sprintf("%s minCount %d", tp.Name, minCount(tp.SchedulingPolicy)))
			}
			if want := []string{"stage-0 minCount 2", "stage-1 minCount 4"}; !slices.Equal(got, want) {
				t.Errorf("Workload templates %q, want %q", got, want)
			}
		}

		// Watch until the JobSet completes: when each PodGroup is seen, and when stage 0 is.
		seen := map[string]time.Time{}
		var initDone time.Time
		var stage0GoneWhileMainRuns bool
		framework.Eventually(ctx, t, 3*time.Minute, "JobSet completes", func(ctx context.Context) (bool, string, error) {
			now := time.Now()
			names, err := podGroupNames(ctx, c, ns, js.Name, s)
			if err != nil {
				return false, err.Error(), nil
			}
			var jobs batchv1.JobList
			if err := c.List(ctx, &jobs, client.InNamespace(ns), client.MatchingLabels{contract.JobSetNameLabelKey: js.Name}); err != nil {
				return false, err.Error(), nil
			}
			complete := map[string]int{}
			for i := range jobs.Items {
				if jobsets.JobHas(&jobs.Items[i], batchv1.JobComplete) {
					complete[jobs.Items[i].Labels[contract.ReplicatedJobNameLabelKey]]++
				}
			}
			if complete["init"] == 1 && initDone.IsZero() {
				initDone = now
			}
			for _, n := range names {
				if _, ok := seen[n]; !ok {
					seen[n] = now
				}
			}
			if slices.Contains(names, stage1) && !slices.Contains(names, stage0) && complete["main"] < 2 {
				stage0GoneWhileMainRuns = true
			}
			if err := c.Get(ctx, client.ObjectKeyFromObject(js), js); err != nil {
				return false, err.Error(), nil
			}
			return jobsets.Finished(js), fmt.Sprintf("PodGroups %v, complete Jobs %v", names, complete), nil
		})
		if !jobsets.Finished(js) || js.Status.TerminalState != string(jobsetv1alpha2.JobSetCompleted) {
			t.Fatalf("JobSet ended %q, want Completed", js.Status.TerminalState)
		}
		if seen[stage1].IsZero() {
			t.Fatalf("stage 1's PodGroup was never seen (seen %v)", seen)
		}
		if seen[stage1].Before(initDone) {
			t.Errorf("stage 1's PodGroup appeared at %s, before stage 0 completed at %s", seen[stage1].Format(time.StampMilli), initDone.Format(time.StampMilli))
		}
		t.Logf("stage 0 completed at %s; stage 1's PodGroup seen at %s (+%s)", initDone.Format(time.StampMilli), seen[stage1].Format(time.StampMilli), seen[stage1].Sub(initDone).Round(time.Millisecond))
		if !stage0GoneWhileMainRuns {
			t.Errorf("stage 0's PodGroup was never seen gone while stage 1 ran")
		}
		waitPodGroups(ctx, t, c, ns, js.Name, s)
		want := map[string]int{"PodGroupCreated": 2, "PodGroupDeleted": 2}
		if s == contract.SchedulerKubernetes {
			waitWorkloadGone(ctx, t, c, ns, "train")
			want["WorkloadCreated"], want["WorkloadDeleted"] = 1, 1
		}
		framework.WaitEventCounts(ctx, t, c, js, want)
		return ctx
	})
	testenv.Test(t, f)
}

// TestSuspendChangeResume: a suspended JobSet has its PodGroup (coscheduling's; then
// Kubernetes' own and its Workload); when its parallelism changes while suspended (as Kueue
// changes it), the PodGroup (and the Workload's template) follows; resumed, the JobSet runs with
// the new size and, once finished, leaves no PodGroup (nor Workload).
func TestSuspendChangeResume(t *testing.T) {
	framework.RequireJobSet(t, framework.ElasticJobSetSince, "no ElasticJobSet feature gate, so JobSet's webhook keeps spec.replicatedJobs "+
		"immutable and parallelism cannot change while suspended")
	testSuspendChangeResume(t, contract.SchedulerCoscheduling)
	testSuspendChangeResume(t, contract.SchedulerKubernetes)
}

func testSuspendChangeResume(t *testing.T, s contract.Scheduler) {
	f := framework.NamespacedFeature(fmt.Sprintf("%s: suspend, change, resume", s), "PodGroup follows the JobSet", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		if s == contract.SchedulerKubernetes {
			requireWorkloadAPI(t, cfg)
		}
		c := framework.Client(t, cfg)
		ns := framework.NamespaceFrom(ctx)
		j := newJobSet(ns, "elastic", s)
		if s == contract.SchedulerCoscheduling {
			j = j.Annotation(contract.ScheduleTimeoutAnnotationKey, "30")
		}
		js := j.ReplicatedJobs(replicated("w", 1, 2, "2s")).Obj()
		js.Spec.Suspend = ptr.To(true)
		framework.CreateAll(ctx, t, c, js)
		// size reads the PodGroup's minMember or minCount (and the Workload template's).
		var size func(ctx context.Context) (int32, string, error)
		if s == contract.SchedulerKubernetes {
			nativePodGroup(ctx, t, c, ns, "elastic")
			size = func(ctx context.Context) (int32, string, error) {
				var pg schedulingv1beta1.PodGroup
				var wl schedulingv1beta1.Workload
				if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "elastic"}, &pg); err != nil {
					return 0, "", err
				}
				if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "elastic"}, &wl); err != nil || len(wl.Spec.PodGroupTemplates) != 1 {
					return 0, "", fmt.Errorf("Workload: %v, templates %+v", err, wl.Spec.PodGroupTemplates)
				}
				pgMin, wlMin := minCount(pg.Spec.SchedulingPolicy), minCount(wl.Spec.PodGroupTemplates[0].SchedulingPolicy)
				if pgMin != wlMin {
					return 0, fmt.Sprintf("PodGroup minCount %d, Workload template minCount %d", pgMin, wlMin), nil
				}
				return pgMin, fmt.Sprintf("minCount %d (PodGroup and Workload)", pgMin), nil
			}
		} else {
			pg := coschedPodGroup(ctx, t, c, ns, "elastic")
			if pg.Spec.MinMember != 2 || ptr.Deref(pg.Spec.ScheduleTimeoutSeconds, 0) != 30 {
				t.Fatalf("PodGroup spec %+v: want minMember 2, scheduleTimeoutSeconds 30", pg.Spec)
			}
			expectResources(t, pg.Spec.MinResources, 2)
			size = func(ctx context.Context) (int32, string, error) {
				err := c.Get(ctx, client.ObjectKeyFromObject(pg), pg)
				return pg.Spec.MinMember, fmt.Sprintf("minMember %d", pg.Spec.MinMember), err
			}
		}
		if n, what, err := size(ctx); err != nil || n != 2 {
			t.Fatalf("before the change: %s, %v; want 2", what, err)
		}

		changed := time.Now()
		if err := retryUpdate(ctx, c, js, func() {
			js.Spec.ReplicatedJobs[0].Template.Spec.Parallelism = ptr.To[int32](3)
			js.Spec.ReplicatedJobs[0].Template.Spec.Completions = ptr.To[int32](3)
		}); err != nil {
			t.Fatalf("changing parallelism while suspended: %v", err)
		}
		framework.Eventually(ctx, t, 30*time.Second, "PodGroup size 3", func(ctx context.Context) (bool, string, error) {
			n, what, err := size(ctx)
			return err == nil && n == 3, fmt.Sprintf("%s, %v", what, err), nil
		})
		t.Logf("%s: PodGroup updated %s after the change", s, time.Since(changed).Round(time.Millisecond))
		if s == contract.SchedulerCoscheduling {
			expectResources(t, coschedPodGroup(ctx, t, c, ns, "elastic").Spec.MinResources, 3)
		}
		waitEvent(ctx, t, c, js, "PodGroupUpdated")
		if s == contract.SchedulerKubernetes {
			waitEvent(ctx, t, c, js, "WorkloadUpdated")
		}

		if err := retryUpdate(ctx, c, js, func() { js.Spec.Suspend = ptr.To(false) }); err != nil {
			t.Fatal(err)
		}
		framework.WaitJobSet(ctx, t, c, js, jobsetv1alpha2.JobSetCompleted)
		if n := len(pods(ctx, t, c, ns, js.Name)); n != 3 {
			t.Errorf("%d pods ran, want 3", n)
		}
		waitPodGroups(ctx, t, c, ns, js.Name, s)
		if err := c.Get(ctx, client.ObjectKeyFromObject(js), js); err != nil {
			t.Fatalf("the JobSet itself must stay: %v", err)
		}
		waitEvent(ctx, t, c, js, "PodGroupDeleted")
		if s == contract.SchedulerKubernetes {
			waitWorkloadGone(ctx, t, c, ns, "elastic")
			waitEvent(ctx, t, c, js, "WorkloadDeleted")
		}
		return ctx
	})
	testenv.Test(t, f)
}

// TestVolcanoFields: a Volcano JobSet with a queue, network topology and two priority classes
// gets a PodGroup with that queue, that network topology (which Volcano v1.14.1's CRD keeps:
// no NetworkTopologyDropped) and the higher class (admission warns about the two), and no update
// loop once Volcano writes the PodGroup's status.
func TestVolcanoFields(t *testing.T) {
	f := framework.NamespacedFeature("queue, priority and network topology", "PodGroup fields", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		c := framework.Client(t, cfg)
		ns := framework.NamespaceFrom(ctx)
		high, low := ns+"-high", ns+"-low"
		for name, v := range map[string]int32{high: 1000, low: 10} {
			pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: v}
			if err := c.Create(ctx, pc); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = c.Delete(context.Background(), pc) })
		}
		js := newJobSet(ns, "fields", contract.SchedulerVolcano).
			Annotation(contract.VolcanoQueueNameAnnotationKey, "default").
			Annotation(contract.NetworkTopologyAnnotationKey, "{mode: soft, highestTierAllowed: 2}").
			ReplicatedJobs(replicated("a", 1, 1, "30s"), replicated("b", 1, 1, "30s")).Obj()
		js.Spec.ReplicatedJobs[0].Template.Spec.Template.Spec.PriorityClassName = low
		js.Spec.ReplicatedJobs[1].Template.Spec.Template.Spec.PriorityClassName = high
		warnings := framework.CreateWithWarnings(ctx, t, cfg, js)
		if !slices.ContainsFunc(warnings, func(w string) bool { return strings.Contains(w, high) && strings.Contains(w, low) }) {
			t.Errorf("admission warnings %q: want one naming both priority classes", warnings)
		}
		pg := volcanoPodGroup(ctx, t, c, ns, "fields")
		if pg.Spec.PriorityClassName != high || pg.Spec.Queue != "default" || pg.Spec.MinMember != 2 {
			t.Errorf("PodGroup spec priorityClassName %q, queue %q, minMember %d: want %q, default, 2", pg.Spec.PriorityClassName, pg.Spec.Queue, pg.Spec.MinMember, high)
		}
		wantTopology := &volcanov1beta1.NetworkTopologySpec{Mode: volcanov1beta1.SoftNetworkTopologyMode, HighestTierAllowed: ptr.To(2)}
		if !equality.Semantic.DeepEqual(pg.Spec.NetworkTopology, wantTopology) {
			t.Errorf("PodGroup spec networkTopology %+v: want %+v", pg.Spec.NetworkTopology, wantTopology)
		}
		for _, p := range pods(ctx, t, c, ns, js.Name) {
			if p.Annotations[contract.VolcanoQueueNameAnnotationKey] != "default" {
				t.Errorf("pod %s has no queue annotation: %v", p.Name, p.Annotations)
			}
		}
		// Volcano writes the PodGroup's status (Running once it bound the gang); podgroups must not
		// rewrite its spec.
		framework.Eventually(ctx, t, time.Minute, "Volcano runs the PodGroup", func(ctx context.Context) (bool, string, error) {
			phase := volcanoPodGroup(ctx, t, c, ns, "fields").Status.Phase
			return phase == volcanov1beta1.PodGroupRunning || phase == volcanov1beta1.PodGroupCompleted, fmt.Sprintf("phase %q", phase), nil
		})
		time.Sleep(3 * time.Second)
		reasons, err := framework.EventReasons(ctx, c, js)
		if err != nil {
			t.Fatal(err)
		}
		if reasons["PodGroupUpdated"] > 0 || reasons["PodGroupCreated"] != 1 || reasons["NetworkTopologyDropped"] > 0 {
			t.Errorf("events %v: want one PodGroupCreated, no NetworkTopologyDropped and no update after Volcano wrote the status", reasons)
		}
		return ctx
	})
	testenv.Test(t, f)
}

// retryUpdate applies change to the latest JobSet until the update does not conflict.
func retryUpdate(ctx context.Context, c client.Client, js *jobsetv1alpha2.JobSet, change func()) error {
	var err error
	for range 10 {
		if err = c.Get(ctx, client.ObjectKeyFromObject(js), js); err != nil {
			return err
		}
		change()
		if err = c.Update(ctx, js); err == nil {
			return nil
		}
		time.Sleep(200 * time.Millisecond)
	}
	return err
}

// TestHandEdits: the controller caches only its PodGroups' metadata. A PodGroup deleted by hand
// is made again; a user's edit of its spec hash is refused (reserved keys), and one whose spec
// and spec hash were changed by a writer with the add-on's rights is read whole from the API
// server and brought back to the JobSet's demand, keeping what others wrote on it.
func TestHandEdits(t *testing.T) {
	f := framework.NamespacedFeature("hand edits", "PodGroup restored", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		c := framework.Client(t, cfg)
		ns := framework.NamespaceFrom(ctx)
		js := newJobSet(ns, "edited", contract.SchedulerCoscheduling).ReplicatedJobs(replicated("w", 1, 2, "2s")).Obj()
		js.Spec.Suspend = ptr.To(true)
		framework.CreateAll(ctx, t, c, js)
		pg := coschedPodGroup(ctx, t, c, ns, "edited")
		first := pg.UID

		if err := c.Delete(ctx, pg); err != nil {
			t.Fatal(err)
		}
		framework.Eventually(ctx, t, 30*time.Second, "PodGroup made again", func(ctx context.Context) (bool, string, error) {
			err := c.Get(ctx, client.ObjectKeyFromObject(pg), pg)
			return err == nil && pg.UID != first && pg.Spec.MinMember == 2, fmt.Sprintf("uid %s minMember %d, %v", pg.UID, pg.Spec.MinMember, err), nil
		})

		before := pg.DeepCopy()
		pg.Spec.MinMember = 7
		pg.Annotations[contract.PodGroupSpecHashAnnotationKey] = "edited-by-hand"
		pg.Annotations["example.com/note"] = "kept"
		// The spec hash is the add-on's (the chart's reserved-keys policy): a user's edit of it
		// is refused, naming the key. One who writes with the add-on's rights can still edit
		// it, and the add-on brings the PodGroup back.
		want := "metadata.annotations[" + contract.PodGroupSpecHashAnnotationKey + "]: Forbidden: written only by the podgroups add-on"
		if err := c.Update(ctx, pg.DeepCopy()); err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("a user's edit of the spec hash = %v, want it refused with %q", err, want)
		}
		addonWriter := framework.ServiceAccountClient(t, cfg, testbed.AddonNamespace, "jobset-addons-podgroups")
		if err := addonWriter.Patch(ctx, pg, client.MergeFrom(before)); err != nil {
			t.Fatal(err)
		}
		framework.Eventually(ctx, t, 30*time.Second, "PodGroup restored", func(ctx context.Context) (bool, string, error) {
			err := c.Get(ctx, client.ObjectKeyFromObject(pg), pg)
			return err == nil && pg.Spec.MinMember == 2 && pg.Annotations[contract.PodGroupSpecHashAnnotationKey] != "edited-by-hand",
				fmt.Sprintf("minMember %d, hash %q, %v", pg.Spec.MinMember, pg.Annotations[contract.PodGroupSpecHashAnnotationKey], err), nil
		})
		if pg.Annotations["example.com/note"] != "kept" {
			t.Errorf("annotations %v: another writer's annotation was dropped", pg.Annotations)
		}
		waitEvent(ctx, t, c, js, "PodGroupUpdated")
		return ctx
	})
	testenv.Test(t, f)
}
