package controller

// Event reasons on the JobSet (the Job is the related object). They are stable: alerts and
// scripts may match on them.
const (
	// ReasonCreated: ResourceClaims were created for a Job.
	ReasonCreated = "ResourceClaimsCreated"
	// ReasonDeleted: a finished Job's ResourceClaims were deleted (whenJobFinished: Delete), or
	// a claim of ours left by an earlier Job of the same name was deleted to be made again.
	ReasonDeleted = "ResourceClaimsDeleted"
	// ReasonFailed: creating or deleting a ResourceClaim failed; the reconcile retries.
	ReasonFailed = "ResourceClaimsFailed"
	// ReasonRefused: the API server refuses the claims of a template for good (a template it
	// no longer accepts, after an upgrade say): told once per template and cause, not per
	// retry; the reconcile retries with back-off, and the JobSet is left as it is.
	ReasonRefused = "ResourceClaimsRefused"
	// ReasonShadowed: the pod template has a pod-level claim of a template's name; it wins, and
	// the template gives the Job no claim.
	ReasonShadowed = "ResourceClaimShadowed"
	// ReasonNameTaken: a ResourceClaim of the name a Job's claim needs exists and is not the
	// add-on's; it is left alone, and the Job's pods use it.
	ReasonNameTaken = "ResourceClaimNameTaken"
	// ReasonInvalid: templates do not parse (they were written past the validating webhook);
	// nothing is created or deleted for them.
	ReasonInvalid = "InvalidResourceClaimTemplates"
)

// Event actions (events.k8s.io/v1 "action").
const (
	actionCreate = "Create"
	actionDelete = "Delete"
	actionSkip   = "Skip"
)
