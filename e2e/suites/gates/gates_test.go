package gates_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/e2e/framework"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// TestElastic (ElasticJobSet): a running JobSet of three stages — init (done), lead (one Job,
// released, running) and w (two Jobs, waiting for lead to complete) — has the parallelism and
// completions of lead raised 1→2 and of w 2→4, then lowered back. Per-pod PVCs of the new indexes exist before
// their pods are scheduled and are kept (Retain) when the indexes go; the gang follows (Workload
// templates and the released stage's PodGroup); each Job keeps its one claim, which the new pods
// name; lead's new pod is released, w's new pods are gated; and a raise past the 256 pods a
// claim serves is refused.
func TestElastic(t *testing.T) {
	gateTest(t, "ElasticJobSet", "a running JobSet scaled up and down", "PVCs, gangs, claims and stages follow", func(ctx context.Context, t *testing.T, cfg *envconf.Config, c client.Client, ns string) {
		framework.RequireWorkloadAPI(t, cfg)
		js := newJobSet(ns, "el", contract.SchedulerKubernetes, "Complete", []string{"lead", "w"}, []string{"lead", "w"},
			stage{"init", 1, 1, "1s"}, stage{"lead", 1, 1, "10m"}, stage{"w", 2, 2, "10m"})
		create(ctx, t, c, js)
		waitPods(ctx, t, c, ns, "el", "lead", 1, true)
		waitPods(ctx, t, c, ns, "el", "w", 4, false)
		waitWorkloadMinCounts(ctx, t, c, ns, "el", map[string]int32{"stage-0": 1, "stage-1": 1, "stage-2": 4}, map[string]int32{"el-stage-1": 1})
		pvcsBefore := pvcs(ctx, t, c, ns, "el")
		claimsBefore := claims(ctx, t, c, ns)
		t.Logf("before: PVCs %v, claims %v", pvcsBefore, claimsBefore)
		if want := []string{"ckpt-el-lead-0-0", "ckpt-el-w-0-0", "ckpt-el-w-0-1", "ckpt-el-w-1-0", "ckpt-el-w-1-1"}; !slices.Equal(slices.Sorted(maps.Keys(pvcsBefore)), want) {
			t.Fatalf("PVCs %v, want %v", slices.Sorted(maps.Keys(pvcsBefore)), want)
		}

		start := time.Now()
		if err := scale(ctx, t, c, js, map[string]int32{"lead": 2, "w": 4}); err != nil {
			t.Fatalf("scaling up: %v", err)
		}
		waitJobSizes(ctx, t, c, ns, map[string]int32{"el-lead-0": 2, "el-w-0": 4, "el-w-1": 4})
		lead := waitPods(ctx, t, c, ns, "el", "lead", 2, true)
		w := waitPods(ctx, t, c, ns, "el", "w", 8, false)
		waitWorkloadMinCounts(ctx, t, c, ns, "el", map[string]int32{"stage-0": 1, "stage-1": 2, "stage-2": 8}, map[string]int32{"el-stage-1": 2})
		t.Logf("scaled up in %s: lead %d pods released, w %d pods gated", time.Since(start).Round(time.Millisecond), len(lead), len(w))
		up := pvcs(ctx, t, c, ns, "el")
		if want := []string{"ckpt-el-lead-0-0", "ckpt-el-lead-0-1", "ckpt-el-w-0-0", "ckpt-el-w-0-1", "ckpt-el-w-0-2", "ckpt-el-w-0-3",
			"ckpt-el-w-1-0", "ckpt-el-w-1-1", "ckpt-el-w-1-2", "ckpt-el-w-1-3"}; !slices.Equal(slices.Sorted(maps.Keys(up)), want) {
			t.Errorf("PVCs after the raise %v, want %v", slices.Sorted(maps.Keys(up)), want)
		}
		for name, uid := range pvcsBefore {
			if up[name] != uid {
				t.Errorf("PVC %s not kept by the raise: %s → %s", name, uid, up[name])
			}
		}
		// Made before their pods needed them: each new index's PVC was created no later than its
		// pod was scheduled (the released stage) or exists while its pod waits (the gated one).
		for _, p := range lead {
			var pvc corev1.PersistentVolumeClaim
			name := "ckpt-el-lead-0-" + index(p)
			if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &pvc); err != nil {
				t.Fatal(err)
			}
			if sched := scheduledAt(p); sched.Before(&pvc.CreationTimestamp) {
				t.Errorf("pod %s scheduled at %s, before its PVC %s was made (%s)", p.Name, sched, name, pvc.CreationTimestamp)
			}
			if got := podPVCNames(p); !slices.Contains(got, name) {
				t.Errorf("pod %s mounts %v, want %s", p.Name, got, name)
			}
			if got := podClaimNames(p); !slices.Equal(got, []string{"el-lead-0-dev"}) {
				t.Errorf("pod %s names claims %v, want [el-lead-0-dev]", p.Name, got)
			}
		}
		for _, p := range w {
			want := "el-w-" + p.Labels[jobsetv1alpha2.JobIndexKey] + "-dev"
			if got := podClaimNames(p); !slices.Equal(got, []string{want}) {
				t.Errorf("pod %s names claims %v, want [%s]", p.Name, got, want)
			}
			if got := podPVCNames(p); !slices.Contains(got, "ckpt-el-w-"+p.Labels[jobsetv1alpha2.JobIndexKey]+"-"+index(p)) {
				t.Errorf("pod %s mounts %v", p.Name, got)
			}
		}
		expectSame(t, "claims", claimsBefore, claims(ctx, t, c, ns))

		// Past what a claim reserved for each pod serves: refused by resourceclaims, naming why
		// (w has two Jobs in its stage, so its claims cannot go on a PodGroup of one Job).
		err := scale(ctx, t, c, js, map[string]int32{"w": 257})
		if err == nil || !strings.Contains(err.Error(), "serves at most 256") {
			t.Errorf("raising w to 257 pods sharing a claim: %v, want refused (serves at most 256)", err)
		} else {
			t.Logf("w to 257: refused: %v", err)
		}

		start = time.Now()
		if err := scale(ctx, t, c, js, map[string]int32{"lead": 1, "w": 2}); err != nil {
			t.Fatalf("scaling down: %v", err)
		}
		waitJobSizes(ctx, t, c, ns, map[string]int32{"el-lead-0": 1, "el-w-0": 2, "el-w-1": 2})
		waitPods(ctx, t, c, ns, "el", "lead", 1, true)
		waitPods(ctx, t, c, ns, "el", "w", 4, false)
		waitWorkloadMinCounts(ctx, t, c, ns, "el", map[string]int32{"stage-0": 1, "stage-1": 1, "stage-2": 4}, map[string]int32{"el-stage-1": 1})
		t.Logf("scaled down in %s", time.Since(start).Round(time.Millisecond))
		// Scale-down is not completion: the removed indexes' PVCs are kept (their checkpoints).
		expectSame(t, "PVCs after the lowering (Retain)", up, pvcs(ctx, t, c, ns, "el"))
		expectSame(t, "claims", claimsBefore, claims(ctx, t, c, ns))
	})
}

// TestInPlaceRestart (InPlaceRestart, KEP-467): a JobSet of two stages (lead, then w once lead is
// Ready) restarts in place: the test plays the agent sidecars (kwok runs no container), writing
// each pod's jobset.sigs.k8s.io/in-place-restart-attempt, and fails one pod of w, which its Job
// replaces (podReplacementPolicy Failed, backoffLimit MaxInt32). JobSet moves its in-place attempt
// 0→1 without a JobSet restart; the add-ons' objects all stay: PVCs, claims, Jobs and PodGroups
// keep their UIDs, the replacement mounts the same PVC and names the same claim, and is released.
func TestInPlaceRestart(t *testing.T) {
	gateTest(t, "InPlaceRestart", "a JobSet restarted in place", "PVCs, claims, gang and stage hold", func(ctx context.Context, t *testing.T, cfg *envconf.Config, c client.Client, ns string) {
		framework.RequireWorkloadAPI(t, cfg)
		js := newJobSet(ns, "ip", contract.SchedulerKubernetes, "Ready", []string{"w"}, []string{"w"},
			stage{"lead", 1, 1, "10m"}, stage{"w", 1, 2, "10m"})
		inPlace(js)
		create(ctx, t, c, js)
		waitPods(ctx, t, c, ns, "ip", "lead", 1, true)
		w := waitPods(ctx, t, c, ns, "ip", "w", 2, true)
		before := snapshot(ctx, t, c, ns, "ip")

		// Attempt 0: every agent reports it, JobSet makes it current.
		all, _ := pods(ctx, c, ns, "ip", "")
		for _, p := range all {
			setAttempt(ctx, t, c, p, 0)
		}
		waitInPlace(ctx, t, c, js, func(s jobsetv1alpha2.JobSetStatus) bool { return ptr.Deref(s.CurrentInPlaceRestartAttempt, -1) == 0 })

		// A worker fails: its pod is replaced by its Job; the healthy pods' agents restart them in
		// place into attempt 1, and JobSet tells the stragglers (previous attempt 0).
		failed := w[1]
		failPod(ctx, t, c, failed)
		for _, p := range all {
			if p.UID != failed.UID {
				setAttempt(ctx, t, c, p, 1)
			}
		}
		waitInPlace(ctx, t, c, js, func(s jobsetv1alpha2.JobSetStatus) bool { return ptr.Deref(s.PreviousInPlaceRestartAttempt, -1) == 0 })
		var repl corev1.Pod
		framework.Eventually(ctx, t, time.Minute, "the failed pod's replacement", func(ctx context.Context) (bool, string, error) {
			ps, err := pods(ctx, c, ns, "ip", "w")
			if err != nil {
				return false, err.Error(), nil
			}
			for _, p := range ps {
				if index(p) == index(failed) && p.UID != failed.UID && p.Status.Phase != corev1.PodFailed {
					repl = p
					return true, "", nil
				}
			}
			return false, fmt.Sprintf("%d pods", len(ps)), nil
		})
		setAttempt(ctx, t, c, repl, 1)
		waitInPlace(ctx, t, c, js, func(s jobsetv1alpha2.JobSetStatus) bool { return ptr.Deref(s.CurrentInPlaceRestartAttempt, -1) == 1 })
		w = waitPods(ctx, t, c, ns, "ip", "w", 2, true)
		after := snapshot(ctx, t, c, ns, "ip")

		expectNoRestart(ctx, t, c, js, "an in-place restart is not a JobSet restart")
		before.expectSame(t, after)
		for _, p := range w {
			if p.UID == repl.UID {
				if got := podPVCNames(p); !slices.Contains(got, "ckpt-ip-w-0-"+index(failed)) {
					t.Errorf("replacement %s mounts %v, want ckpt-ip-w-0-%s", p.Name, got, index(failed))
				}
				if got := podClaimNames(p); !slices.Equal(got, []string{"ip-w-0-dev"}) {
					t.Errorf("replacement %s names claims %v, want [ip-w-0-dev]", p.Name, got)
				}
			}
		}
		t.Logf("in place: attempt 0→1, restarts 0; replacement %s (index %s) running; PVCs %v, claims %v, PodGroups %v unchanged",
			repl.Name, index(repl), after.pvcs, after.claims, after.podGroups)
	})
}

// TestRestartJob (RestartJob): a JobSet of two stages (lead, then w's two Jobs once lead is Ready)
// with the failure policy action RestartJob; a pod of Job w-1 fails, and JobSet re-creates that
// Job alone. Its new pods are released, mount the same per-pod PVCs and name a claim of the new
// Job; the gang's PodGroups stay; lead's and w-0's Jobs, pods and claims are not touched.
func TestRestartJob(t *testing.T) { restartJob(t, false) }

// TestRestartJobRetainedClaim (make e2e SUITE=gates) is TestRestartJob with the claim template's
// whenJobFinished: Retain, so that the failed Job's claim is not deleted when it fails but goes
// with it (owner reference) while its successor, of the same name, is made.
func TestRestartJobRetainedClaim(t *testing.T) { restartJob(t, true) }

func restartJob(t *testing.T, retain bool) {
	gateTest(t, "RestartJob", "one failed Job re-created (RestartJob)", "its claim, PVCs, stage and gang are right; the others untouched", func(ctx context.Context, t *testing.T, cfg *envconf.Config, c client.Client, ns string) {
		framework.RequireWorkloadAPI(t, cfg)
		js := newJobSet(ns, "rj", contract.SchedulerKubernetes, "Ready", []string{"w"}, []string{"w"},
			stage{"lead", 1, 1, "10m"}, stage{"w", 2, 2, "10m"})
		if retain {
			ann := js.Spec.ReplicatedJobs[1].Template.Annotations
			ann[contract.TemplatesAnnotationKey] = strings.Replace(ann[contract.TemplatesAnnotationKey], "}}]}}}]", "}}]}}, whenJobFinished: Retain}]", 1)
			if !strings.Contains(ann[contract.TemplatesAnnotationKey], "Retain") {
				t.Fatalf("the template did not take whenJobFinished: %s", ann[contract.TemplatesAnnotationKey])
			}
		}
		js.Spec.FailurePolicy = &jobsetv1alpha2.FailurePolicy{MaxRestarts: 2, Rules: []jobsetv1alpha2.FailurePolicyRule{
			{Name: "restartOne", Action: jobsetv1alpha2.RestartJob, TargetReplicatedJobs: []string{"w"}}}}
		create(ctx, t, c, js)
		waitPods(ctx, t, c, ns, "rj", "lead", 1, true)
		w := waitPods(ctx, t, c, ns, "rj", "w", 4, true)
		before := snapshot(ctx, t, c, ns, "rj")
		oldJob := before.jobs["rj-w-1"]

		var victim corev1.Pod
		for _, p := range w {
			if p.Labels[jobsetv1alpha2.JobIndexKey] == "1" {
				victim = p
				break
			}
		}
		start := time.Now()
		failPod(ctx, t, c, victim)
		framework.Eventually(ctx, t, time.Minute, "Job rj-w-1 re-created", func(ctx context.Context) (bool, string, error) {
			js := jobs(ctx, t, c, ns, "rj")
			j, ok := js["rj-w-1"]
			if !ok {
				return false, "no rj-w-1", nil
			}
			return j.UID != oldJob, fmt.Sprintf("rj-w-1 %s labels %v", j.UID, j.Labels), nil
		})
		w = waitPods(ctx, t, c, ns, "rj", "w", 4, true)
		t.Logf("Job rj-w-1 re-created and its pods running in %s", time.Since(start).Round(time.Millisecond))
		after := snapshot(ctx, t, c, ns, "rj")

		expectNoRestart(ctx, t, c, js, "only one Job restarted")
		newJob := jobs(ctx, t, c, ns, "rj")["rj-w-1"]
		// Nothing else touched.
		for _, name := range []string{"rj-lead-0", "rj-w-0"} {
			if before.jobs[name] != after.jobs[name] {
				t.Errorf("Job %s re-created (%s → %s); only rj-w-1 should be", name, before.jobs[name], after.jobs[name])
			}
		}
		for name, uid := range before.pods {
			if strings.HasPrefix(name, "rj-w-1-") {
				continue
			}
			if after.pods[name] != uid {
				t.Errorf("pod %s of an untouched Job changed (%s → %s)", name, uid, after.pods[name])
			}
		}
		expectSame(t, "PVCs", before.pvcs, after.pvcs)
		expectSame(t, "PodGroups", before.podGroups, after.podGroups)
		if before.claims["rj-w-0-dev"] != after.claims["rj-w-0-dev"] {
			t.Errorf("claim rj-w-0-dev of the untouched Job changed: %s → %s", before.claims["rj-w-0-dev"], after.claims["rj-w-0-dev"])
		}
		// The re-created Job's claim is its own: owned by the new Job, named by its new pods.
		for _, p := range w {
			if p.Labels[jobsetv1alpha2.JobIndexKey] != "1" {
				continue
			}
			names := podClaimNames(p)
			if len(names) != 1 {
				t.Errorf("pod %s names claims %v, want one", p.Name, names)
				continue
			}
			var rc resourcev1.ResourceClaim
			if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: names[0]}, &rc); err != nil {
				t.Errorf("pod %s: claim %s: %v", p.Name, names[0], err)
				continue
			}
			if owner := metav1.GetControllerOf(&rc); owner == nil || owner.UID != newJob.UID {
				t.Errorf("pod %s of the re-created Job %s names claim %s, owned by %v: a claim of the failed Job", p.Name, newJob.UID, rc.Name, owner)
			}
			if got := podPVCNames(p); !slices.Contains(got, "ckpt-rj-w-1-"+index(p)) {
				t.Errorf("pod %s mounts %v, want ckpt-rj-w-1-%s", p.Name, got, index(p))
			}
		}
		t.Logf("re-created rj-w-1 (%s → %s, job-restart-attempt %s); claims before %v, after %v; PVCs %v and PodGroups %v unchanged",
			oldJob, newJob.UID, newJob.Labels["jobset.sigs.k8s.io/job-restart-attempt"], before.claims, after.claims, after.pvcs, after.podGroups)
	})
}

// state is what the add-ons made for a JobSet, and its Jobs and pods, by name and UID.
type state struct {
	pvcs, claims, podGroups, jobs, pods map[string]types.UID
}

func snapshot(ctx context.Context, t *testing.T, c client.Client, ns, js string) state {
	t.Helper()
	s := state{pvcs: pvcs(ctx, t, c, ns, js), claims: claims(ctx, t, c, ns), podGroups: map[string]types.UID{}, jobs: map[string]types.UID{}, pods: map[string]types.UID{}}
	var pgs schedulingv1beta1.PodGroupList
	if err := c.List(ctx, &pgs, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, pg := range pgs.Items {
		s.podGroups[pg.Name] = pg.UID
	}
	for name, j := range jobs(ctx, t, c, ns, js) {
		s.jobs[name] = j.UID
	}
	ps, err := pods(ctx, c, ns, js, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ps {
		if p.Status.Phase != corev1.PodFailed {
			s.pods[p.Name] = p.UID
		}
	}
	return s
}

// expectSame checks that an in-place restart left the add-ons' objects and the Jobs as they were.
func (s state) expectSame(t *testing.T, after state) {
	t.Helper()
	expectSame(t, "PVCs", s.pvcs, after.pvcs)
	expectSame(t, "claims", s.claims, after.claims)
	expectSame(t, "PodGroups", s.podGroups, after.podGroups)
	expectSame(t, "Jobs", s.jobs, after.jobs)
}

func expectSame(t *testing.T, what string, before, after map[string]types.UID) {
	t.Helper()
	if !maps.Equal(before, after) {
		t.Errorf("%s changed:\nbefore %v\nafter  %v", what, before, after)
	}
}

// expectNoRestart checks that the JobSet was not restarted (status.restarts 0), for the reason why.
func expectNoRestart(ctx context.Context, t *testing.T, c client.Client, js *jobsetv1alpha2.JobSet, why string) {
	t.Helper()
	var cur jobsetv1alpha2.JobSet
	if err := c.Get(ctx, client.ObjectKeyFromObject(js), &cur); err != nil {
		t.Fatal(err)
	}
	if cur.Status.Restarts != 0 {
		t.Errorf("status.restarts %d, want 0: %s", cur.Status.Restarts, why)
	}
}

// setAttempt writes the pod's in-place restart attempt, as its agent sidecar does.
func setAttempt(ctx context.Context, t *testing.T, c client.Client, p corev1.Pod, n int) {
	t.Helper()
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, jobsetv1alpha2.InPlaceRestartAttemptKey, strconv.Itoa(n))
	if err := c.Patch(ctx, &p, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		t.Fatalf("setting the in-place attempt of %s: %v", p.Name, err)
	}
}

// failPod makes a running pod fail, as a worker exiting 1 does (kwok runs no container).
func failPod(ctx context.Context, t *testing.T, c client.Client, p corev1.Pod) {
	t.Helper()
	var err error
	for range 10 {
		fail(&p)
		if err = c.Status().Update(ctx, &p); !apierrors.IsConflict(err) {
			break
		}
		if err = c.Get(ctx, client.ObjectKeyFromObject(&p), &p); err != nil {
			break
		}
	}
	if err != nil {
		t.Fatalf("failing pod %s: %v", p.Name, err)
	}
}

// fail sets the status of a pod whose container exited 1.
func fail(p *corev1.Pod) {
	now := metav1.Now()
	p.Status.Phase = corev1.PodFailed
	for i := range p.Status.ContainerStatuses {
		p.Status.ContainerStatuses[i].Ready = false
		p.Status.ContainerStatuses[i].State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error", StartedAt: now, FinishedAt: now}}
	}
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == corev1.PodReady || p.Status.Conditions[i].Type == corev1.ContainersReady {
			p.Status.Conditions[i].Status = corev1.ConditionFalse
		}
	}
}

// waitInPlace waits until the JobSet's status satisfies ok.
func waitInPlace(ctx context.Context, t *testing.T, c client.Client, js *jobsetv1alpha2.JobSet, ok func(jobsetv1alpha2.JobSetStatus) bool) {
	t.Helper()
	framework.Eventually(ctx, t, time.Minute, "JobSet's in-place restart attempts", func(ctx context.Context) (bool, string, error) {
		var cur jobsetv1alpha2.JobSet
		if err := c.Get(ctx, client.ObjectKeyFromObject(js), &cur); err != nil {
			return false, err.Error(), nil
		}
		return ok(cur.Status), fmt.Sprintf("current %v, previous %v, restarts %d", ptr.Deref(cur.Status.CurrentInPlaceRestartAttempt, -1),
			ptr.Deref(cur.Status.PreviousInPlaceRestartAttempt, -1), cur.Status.Restarts), nil
	})
}

// scheduledAt is when the pod was bound (its PodScheduled condition turned true).
func scheduledAt(p corev1.Pod) *metav1.Time {
	for _, cond := range p.Status.Conditions {
		if cond.Type == corev1.PodScheduled && cond.Status == corev1.ConditionTrue {
			return &cond.LastTransitionTime
		}
	}
	return &metav1.Time{}
}
