package jobsets

import (
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// BarrierGroup is one start barrier of a restart attempt (contract.StartBarrierAnnotationKey):
// the ReplicatedJobs whose pods wait for each other, and how many pods that is.
type BarrierGroup struct {
	// Name is contract.StartBarrierGroup.
	Name string
	// Stage is the index of the stage the group is (0 for a JobSet barrier).
	Stage int
	// ReplicatedJobs are the group's ReplicatedJobs, in spec order.
	ReplicatedJobs []string
	// Pods is how many pods the barrier waits for: the sum over its ReplicatedJobs of replicas
	// times the pods of one Job running at once (PodsPerJob).
	Pods int32
}

// BarrierGroups are the start barriers of the JobSet: one for all its ReplicatedJobs when it
// runs in a single stage, else one per stage of stages (Stages), whatever the mode: the pods of
// a later stage are not made (upstream dependsOn, startupPolicy InOrder) or not placed (the
// sequencer's gate) until an earlier stage started, so a barrier across stages could never
// open: on a staged JobSet, mode JobSet means what Stage means (StagedJobSetBarrier).
func BarrierGroups(js *jobsetv1alpha2.JobSet, stages []contract.Stage) []BarrierGroup {
	if len(stages) <= 1 {
		g := BarrierGroup{Name: contract.StartBarrierGroup(contract.StartBarrierJobSet, 0)}
		for i := range js.Spec.ReplicatedJobs {
			rj := &js.Spec.ReplicatedJobs[i]
			g.ReplicatedJobs = append(g.ReplicatedJobs, rj.Name)
			g.Pods += rj.Replicas * PodsPerJob(rj)
		}
		return []BarrierGroup{g}
	}
	groups := make([]BarrierGroup, 0, len(stages))
	for _, s := range stages {
		g := BarrierGroup{Name: contract.StartBarrierGroup(contract.StartBarrierStage, s.Index), Stage: s.Index, ReplicatedJobs: s.ReplicatedJobs}
		for _, name := range s.ReplicatedJobs {
			if rj := ReplicatedJob(js, name); rj != nil {
				g.Pods += rj.Replicas * PodsPerJob(rj)
			}
		}
		groups = append(groups, g)
	}
	return groups
}

// StagedJobSetBarrier tells whether the JobSet asks for a barrier of mode JobSet while it runs
// in more than one stage: each stage then gets a barrier of its own (BarrierGroups).
func StagedJobSetBarrier(mode contract.StartBarrier, stages []contract.Stage) bool {
	return mode == contract.StartBarrierJobSet && len(stages) > 1
}

// BarrierStatus is the status of the pod's barrier init container, or nil.
func BarrierStatus(p *corev1.Pod) *corev1.ContainerStatus {
	for i := range p.Status.InitContainerStatuses {
		if p.Status.InitContainerStatuses[i].Name == contract.StartBarrierContainerName {
			return &p.Status.InitContainerStatuses[i]
		}
	}
	return nil
}

// AtBarrier tells whether the pod waits at its start barrier now — bound, its barrier container
// running, not told to fail — and since when (the container's start, to the second).
func AtBarrier(p *corev1.Pod) (time.Time, bool) {
	s := BarrierStatus(p)
	if p.Spec.NodeName == "" || s == nil || s.State.Running == nil ||
		strings.HasPrefix(p.Annotations[contract.StartBarrierStateAnnotationKey], contract.StartBarrierFailedPrefix) {
		return time.Time{}, false
	}
	return s.State.Running.StartedAt.Time, true
}

// NotAtBarrier names the pods of a barrier that do not wait at it, with where they are, at most
// shown of them, and counts those of the want not made yet: "x-late-0-0 (not scheduled),
// 2 pods not created yet".
func NotAtBarrier(pods []*corev1.Pod, want int32, shown int) string {
	var parts []string
	for _, p := range pods {
		if _, ok := AtBarrier(p); ok {
			continue
		}
		what := "not scheduled"
		if p.Spec.NodeName != "" {
			what = "on " + p.Spec.NodeName + ", not at the barrier yet"
		}
		parts = append(parts, p.Name+" ("+what+")")
	}
	slices.Sort(parts)
	if len(parts) > shown {
		parts = append(parts[:shown], fmt.Sprintf("and %d more", len(parts)-shown))
	}
	if n := int(want) - len(pods); n > 0 {
		parts = append(parts, fmt.Sprintf("%d pods not created yet", n))
	}
	return strings.Join(parts, ", ")
}

// NotWaiting names the pods of a barrier that do not wait at it: first each pod on a node that
// cannot be trusted (down, by pod name: why, as addon.NodeDown says), whose status, at the
// barrier or not, is what its kubelet last wrote and does not count; then the others that are
// not at it (NotAtBarrier), at most shown of them.
func NotWaiting(pods []*corev1.Pod, down map[string]string, want int32, shown int) string {
	var parts []string
	var up []*corev1.Pod
	for _, p := range pods {
		if why, ok := down[p.Name]; ok {
			parts = append(parts, fmt.Sprintf("%s (on %s, %s: not counted as waiting)", p.Name, p.Spec.NodeName, why))
			continue
		}
		up = append(up, p)
	}
	if missing := NotAtBarrier(up, want-int32(len(parts)), shown); missing != "" {
		parts = append(parts, missing)
	}
	return strings.Join(parts, ", ")
}

// BarrierRun is the run of the JobSet (contract.StartBarrierRun) from its Suspended condition,
// as upstream JobSet writes it when it suspends and resumes; known is false while the JobSet is
// suspended (no run).
func BarrierRun(js *jobsetv1alpha2.JobSet) (run string, known bool) {
	if ptr.Deref(js.Spec.Suspend, false) {
		return "", false
	}
	c := apimeta.FindStatusCondition(js.Status.Conditions, string(jobsetv1alpha2.JobSetSuspended))
	if c == nil {
		return contract.StartBarrierRun(false, false, time.Time{}), true
	}
	return contract.StartBarrierRun(true, c.Status == metav1.ConditionTrue, c.LastTransitionTime.Time), true
}
