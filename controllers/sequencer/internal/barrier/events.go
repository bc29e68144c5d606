package barrier

// Event reasons on the JobSet. They are stable: alerts and scripts may match on them.
const (
	// ReasonBarrierOpened: every pod of a start barrier waited at it, and the sequencer opened
	// it. The message names the barrier, the pods and how long the first waited.
	ReasonBarrierOpened = "StartBarrierOpened"
	// ReasonBarrierWaiting: a start barrier's first pod has waited past half its timeout (at most
	// a minute); the message names the pods not there yet. Told once per barrier and attempt.
	ReasonBarrierWaiting = "StartBarrierWaiting"
	// ReasonBarrierTimedOut: a start barrier was not opened within its timeout: its waiting pods
	// were failed, with the missing pods' names in their termination message.
	ReasonBarrierTimedOut = "StartBarrierTimedOut"
	// ReasonBarrierBlocked: a start barrier cannot open because a pod of it is stuck before it:
	// an init container (the barrier's too) waits for a cause that does not pass by itself
	// (StuckReasons: a bad image, a missing Secret or ConfigMap, a securityContext the kubelet
	// refuses, a crash loop), or the pod has been unschedulable for UnschedulableAfter. The
	// message names the pod, the container and the cause. Told once per barrier, attempt,
	// container and reason.
	ReasonBarrierBlocked = "StartBarrierBlocked"
	// ReasonNotAdmitted: the JobSet has a start barrier but was created while the sequencer's
	// mutating webhook was not running, so its pods have no barrier and none is opened.
	ReasonNotAdmitted = "NotAdmitted"
	// ReasonInvalid: the start barrier or the stages do not parse (the JobSet was admitted
	// without the validating webhook); no barrier is opened.
	ReasonInvalid = "InvalidSequence"
)

// Event actions (events.k8s.io/v1 "action").
const (
	actionSkip = "Skip"
	actionOpen = "Open"
	actionWait = "Wait"
	actionFail = "Fail"
)
