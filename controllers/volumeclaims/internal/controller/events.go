package controller

// Event reasons on the JobSet. They are stable: alerts and scripts may match on them.
const (
	// ReasonCreated: PVCs were created for the JobSet.
	ReasonCreated = "VolumeClaimsCreated"
	// ReasonReused: PVCs of the JobSet's names already existed and are used as they are.
	ReasonReused = "VolumeClaimsReused"
	// ReasonDeleted: PVCs were deleted by the retention policy.
	ReasonDeleted = "VolumeClaimsDeleted"
	// ReasonFailed: creating, adopting or deleting PVCs failed; the reconcile retries.
	ReasonFailed = "VolumeClaimsFailed"
	// ReasonNotAdmitted: the JobSet has policies but was admitted while the webhook was not
	// running, so its pods do not mount the PVCs; nothing is created or deleted for it.
	ReasonNotAdmitted = "NotAdmitted"
	// ReasonInvalid: the policies annotation does not parse (it was admitted without the
	// validating webhook); nothing is created or deleted.
	ReasonInvalid = "InvalidPolicies"
)

// Event actions (events.k8s.io/v1 "action").
const (
	actionCreate = "Create"
	actionDelete = "Delete"
	actionReuse  = "Reuse"
	actionSkip   = "Skip"
)
