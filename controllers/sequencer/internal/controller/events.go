package controller

// Event reasons on the JobSet. They are stable: alerts and scripts may match on them.
const (
	// ReasonStageReleased: the sequencer removed its scheduling gate from the pods of a
	// ReplicatedJob, whose predecessors all reached their status. The message names the
	// ReplicatedJob and what it waited for.
	ReasonStageReleased = "StageReleased"
	// ReasonReleasesWithdrawn: the JobSet was suspended (Kueue evicted or preempted it) after
	// some of its ReplicatedJobs were released; they are held again, and released again once
	// their predecessors hold after it resumes. The message names them.
	ReasonReleasesWithdrawn = "StageReleasesWithdrawn"
	// ReasonReleaseFailed: removing the gate from pods, or recording the release, failed; the
	// reconcile retries.
	ReasonReleaseFailed = "StageReleaseFailed"
	// ReasonNotAdmitted: the JobSet uses the sequencer but was created while its mutating
	// webhook was not running, so its pods carry no gate and the sequencer cannot hold them.
	ReasonNotAdmitted = "NotAdmitted"
	// ReasonInvalid: the sequencer annotations do not make valid stages (the JobSet was admitted
	// without the validating webhook); nothing is released.
	ReasonInvalid = "InvalidSequence"

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
)

// Event actions (events.k8s.io/v1 "action").
const (
	actionRelease  = "Release"
	actionSkip     = "Skip"
	actionWithdraw = "Withdraw"
	actionOpen     = "Open"
	actionWait     = "Wait"
	actionFail     = "Fail"
)
