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
)

// Event actions (events.k8s.io/v1 "action").
const (
	actionRelease  = "Release"
	actionSkip     = "Skip"
	actionWithdraw = "Withdraw"
)
