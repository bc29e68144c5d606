package testbed

import (
	"fmt"

	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// kwok plays the kubelet's part of the sequencer's start barrier (docs/sequencer.md), as the
// kubelet does it for a pod with restartPolicy Never, with three selectors on its stages:
//
//   - a bound pod whose barrier init container (contract.StartBarrierContainerName) is not told
//     anything yet (its barrier-state annotation neither open nor failed) gets the status of a
//     pod waiting in it: the init containers before it done, it running, the pod Pending and
//     not Initialized (barrierWaitStage);
//   - such a pod is never made Ready by kwok's pod-ready stage (heldAtBarrier, added to it);
//   - once the annotation says open, pod-ready applies as to any pod: the barrier container
//     done, the main containers running;
//   - once it says failed, the pod fails with the barrier container's exit code 1 and the
//     annotation's text as its message, as the barrier program writes it to its termination
//     log (barrierFailStage).
//
// What kwok does not do is the kubelet's part between them: a downwardAPI volume rewritten and
// read by the barrier program; the kind suite runs the real thing. A pod annotated
// BarrierDeafAnnotationKey plays a kubelet that lost the rewrite of the first "open": it stays
// at its barrier until the controller tells it again (contract.StartBarrierNudgeAnnotationKey).
var (
	barrierState  = `(.metadata.annotations["` + contract.StartBarrierStateAnnotationKey + `"] // "")`
	hasBarrier    = `any(.spec.initContainers[]?; .name == "` + contract.StartBarrierContainerName + `")`
	deafNotNudged = `(.metadata.annotations["` + BarrierDeafAnnotationKey + `"] // "") == "true" and ` +
		`(.metadata.annotations["` + contract.StartBarrierNudgeAnnotationKey + `"] // "") == ""`
	// heldAtBarrier: the pod has the barrier and it is not open (or, deaf, not told again).
	heldAtBarrier = hasBarrier + ` and (` + barrierState + ` != "` + contract.StartBarrierOpen + `" or (` + deafNotNudged + `))`
	barrierFailed = hasBarrier + ` and (` + barrierState + ` | startswith("` + contract.StartBarrierFailedPrefix + `"))`
	atBarrier     = `any(.status.initContainerStatuses[]?; .name == "` + contract.StartBarrierContainerName + `" and .state.running != null)`
	// barrierBlocked: the pod plays a kubelet that cannot start its barrier container
	// (BarrierWaitingReasonAnnotationKey), blockedShown: kwok shows it so already.
	barrierBlocked = hasBarrier + ` and (.metadata.annotations["` + BarrierWaitingReasonAnnotationKey + `"] // "") != ""`
	blockedShown   = `any(.status.initContainerStatuses[]?; .name == "` + contract.StartBarrierContainerName + `" and .state.waiting != null)`
)

// BarrierWaitingReasonAnnotationKey on a pod template makes kwok show its pods' barrier
// container waiting with that reason (CreateContainerConfigError, ImagePullBackOff, ...) instead
// of running, as the kubelet shows a container it cannot start: such a pod never reaches its
// barrier.
const BarrierWaitingReasonAnnotationKey = "testbed.jobset-addons.io/barrier-waiting-reason"

// BarrierDeafAnnotationKey on a pod template makes kwok keep its pods at their start barrier
// after they are told open, until they are told again (a kubelet that lost the first rewrite of
// the pod's downwardAPI file).
const BarrierDeafAnnotationKey = "testbed.jobset-addons.io/barrier-deaf"

// holdAtBarrier adds to kwok's pod-ready stage that it does not apply to a pod held at its
// barrier.
func holdAtBarrier(podReady map[string]any) error {
	spec, _ := podReady["spec"].(map[string]any)
	sel, _ := spec["selector"].(map[string]any)
	exprs, ok := sel["matchExpressions"].([]any)
	if !ok {
		return fmt.Errorf("kwok's pod-ready stage changed: no selector.matchExpressions")
	}
	sel["matchExpressions"] = append(exprs, map[string]any{"key": heldAtBarrier, "operator": "NotIn", "values": []any{"true"}})
	return nil
}

func barrierStages() []any {
	pending := map[string]any{"key": ".status.phase", "operator": "In", "values": []any{"Pending"}}
	alive := map[string]any{"key": ".metadata.deletionTimestamp", "operator": "DoesNotExist"}
	is := func(expr string, v bool) map[string]any {
		op := "In"
		if !v {
			op = "NotIn"
		}
		return map[string]any{"key": expr, "operator": op, "values": []any{"true"}}
	}
	stage := func(name string, match []any, status string) map[string]any {
		return map[string]any{
			"apiVersion": "kwok.x-k8s.io/v1alpha1",
			"kind":       "Stage",
			"metadata":   map[string]any{"name": name},
			"spec": map[string]any{
				"resourceRef": map[string]any{"apiGroup": "v1", "kind": "Pod"},
				"selector":    map[string]any{"matchExpressions": match},
				"next":        map[string]any{"statusTemplate": status},
			},
		}
	}
	return []any{
		stage("pod-at-start-barrier", []any{alive, pending, is(heldAtBarrier, true), is(barrierFailed, false), is(atBarrier, false), is(barrierBlocked, false)}, barrierWaitStatus),
		stage("pod-start-barrier-blocked", []any{alive, pending, is(barrierBlocked, true), is(barrierFailed, false), is(blockedShown, false)}, barrierBlockedStatus),
		stage("pod-start-barrier-failed", []any{alive, pending, is(barrierFailed, true)}, barrierFailStatus),
	}
}

// barrierWaitStatus: the user's init containers done (sidecars running), the barrier running.
// No pod IP: kwok's pod-ready stage gives one when the barrier opens (given here too, the pod
// would get two, which the apiserver refuses).
const barrierWaitStatus = `{{ $now := Now }}
conditions:
- lastTransitionTime: {{ $now | Quote }}
  status: "False"
  reason: ContainersNotInitialized
  type: Initialized
- lastTransitionTime: {{ $now | Quote }}
  status: "False"
  reason: ContainersNotReady
  type: Ready
- lastTransitionTime: {{ $now | Quote }}
  status: "False"
  reason: ContainersNotReady
  type: ContainersReady
initContainerStatuses:
{{ range .spec.initContainers }}
- image: {{ .image | Quote }}
  name: {{ .name | Quote }}
  restartCount: 0
  {{ if eq .name "` + contract.StartBarrierContainerName + `" }}
  ready: false
  started: true
  state:
    running:
      startedAt: {{ $now | Quote }}
  {{ else if eq .restartPolicy "Always" }}
  ready: true
  started: true
  state:
    running:
      startedAt: {{ $now | Quote }}
  {{ else }}
  ready: true
  state:
    terminated:
      exitCode: 0
      finishedAt: {{ $now | Quote }}
      reason: Completed
      startedAt: {{ $now | Quote }}
  {{ end }}
{{ end }}
` + mainWaiting + `{{ $hostIPs := NodeIPsWith .spec.nodeName }}
{{ with $hostIPs }}
hostIP: {{ index . 0 | Quote }}
hostIPs:
{{ range . }}
- ip: {{ . | Quote }}
{{ end }}
{{ end }}
phase: Pending
startTime: {{ $now | Quote }}
`

// barrierBlockedStatus: the user's init containers done, the barrier container waiting with the
// reason of BarrierWaitingReasonAnnotationKey, as the kubelet shows a container it cannot create.
const barrierBlockedStatus = `{{ $now := Now }}
conditions:
- lastTransitionTime: {{ $now | Quote }}
  status: "False"
  reason: ContainersNotInitialized
  type: Initialized
initContainerStatuses:
{{ $reason := index .metadata.annotations "` + BarrierWaitingReasonAnnotationKey + `" }}
{{ range .spec.initContainers }}
- image: {{ .image | Quote }}
  name: {{ .name | Quote }}
  ready: false
  restartCount: 0
  state:
    {{ if eq .name "` + contract.StartBarrierContainerName + `" }}
    waiting:
      reason: {{ $reason | Quote }}
      message: {{ printf "testbed: the kubelet cannot start this container (%s)" $reason | Quote }}
    {{ else }}
    terminated:
      exitCode: 0
      finishedAt: {{ $now | Quote }}
      reason: Completed
      startedAt: {{ $now | Quote }}
    {{ end }}
{{ end }}
` + mainWaiting + `phase: Pending
startTime: {{ $now | Quote }}
`

// barrierFailStatus: the barrier container exited 1 with the annotation as its message.
const barrierFailStatus = `{{ $now := Now }}
conditions:
- lastTransitionTime: {{ $now | Quote }}
  status: "False"
  reason: PodFailed
  type: Ready
initContainerStatuses:
{{ $state := index .metadata.annotations "` + contract.StartBarrierStateAnnotationKey + `" }}
{{ range .spec.initContainers }}
- image: {{ .image | Quote }}
  name: {{ .name | Quote }}
  ready: false
  restartCount: 0
  state:
    terminated:
      {{ if eq .name "` + contract.StartBarrierContainerName + `" }}
      exitCode: 1
      reason: Error
      message: {{ printf "start barrier %s" $state | Quote }}
      {{ else }}
      exitCode: 0
      reason: Completed
      {{ end }}
      finishedAt: {{ $now | Quote }}
      startedAt: {{ $now | Quote }}
{{ end }}
` + mainWaiting + `phase: Failed
`

// mainWaiting: the main containers not started, as the kubelet shows them while init
// containers run.
const mainWaiting = `containerStatuses:
{{ range .spec.containers }}
- image: {{ .image | Quote }}
  name: {{ .name | Quote }}
  ready: false
  restartCount: 0
  state:
    waiting:
      reason: PodInitializing
{{ end }}
`
