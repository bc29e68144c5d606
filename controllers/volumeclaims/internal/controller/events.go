package controller

// Event reasons on the JobSet. They are stable: alerts and scripts may match on them.
const (
	// ReasonCreated: PVCs were created for the JobSet.
	ReasonCreated = "VolumeClaimsCreated"
	// ReasonReused: PVCs of the JobSet's names already existed and are used as they are.
	ReasonReused = "VolumeClaimsReused"
	// ReasonDeleted: PVCs were deleted by the retention policy.
	ReasonDeleted = "VolumeClaimsDeleted"
	// ReasonHeld: PVCs deleted by retention stay Terminating because pods that ran with them
	// still exist (Kubernetes' pvc-protection); the message names them, counts the pods and
	// says what releases them. Told once per PVC.
	ReasonHeld = "VolumeClaimsHeld"
	// ReasonReleased: PVCs deleted by retention are gone, their storage released.
	ReasonReleased = "VolumeClaimsReleased"
	// ReasonFinishedPodsDeleted: finished pods of the JobSet that held PVCs deleted by
	// retention were deleted (finishedPods: Delete); the message says how each ended.
	ReasonFinishedPodsDeleted = "FinishedPodsDeleted"
	// ReasonExpired: a retained PVC no pod used for retentionPolicy.expireAfterUnused was
	// deleted, its data with it. Told on the PVC, and on its JobSet while there is one.
	ReasonExpired = "VolumeClaimExpired"
	// ReasonNodeLost: the node a per-pod PVC's volume is pinned to is lost (deleted, or tainted
	// out-of-service) and the policy says whenNodeLost: Recreate (or it is unreachable and the
	// policy says whenNodeUnreachable: Recreate too): the PVC (and the pod stuck on the node) was deleted, its data
	// given up, so that the replacement pod gets a new, empty PVC on another node.
	ReasonNodeLost = "VolumeClaimNodeLost"
	// ReasonNodeLostKept: the node a per-pod PVC's volume is pinned to is lost and the policy
	// says whenNodeLost: Keep: the pod waits for the node to come back. Told once per PVC and node.
	ReasonNodeLostKept = "VolumeClaimWaitsForNode"
	// ReasonNameTaken: a PVC of a name the JobSet's policies give exists and is another
	// JobSet's (names are joined with "-", so two JobSets can make one name), or made for
	// another part of this one: it is not mounted, adopted, changed or deleted, and the pods
	// that would mount it wait. Told once per PVC; the message names the JobSet it was made for.
	ReasonNameTaken = "VolumeClaimNameTaken"
	// ReasonNodeUnreachable: the nodes a per-pod PVC's volume is pinned to have been NotReady or
	// unreachable, as volumeclaims saw them, for nodeLostGracePeriod, and the policy does not
	// say whenNodeUnreachable: Recreate: the data is kept, as the pods there may still run
	// behind a partition; the message says how to mark the machine down. Told once per PVC and
	// nodes.
	ReasonNodeUnreachable = "VolumeClaimNodeUnreachable"
	// ReasonPodDeleteRefused: deleting a pod stuck on a lost node, to give up its PVC, was
	// refused by the API server (a ValidatingAdmissionPolicy, named in the message, such as the
	// chart's admissionPolicies.limitAddonWrites; RBAC): the PVC is kept while the pod is
	// there, and the reconcile retries. Told once per pod and cause.
	ReasonPodDeleteRefused = "VolumeClaimPodDeleteRefused"
	// ReasonFailed: creating, adopting or deleting PVCs failed; the reconcile retries.
	ReasonFailed = "VolumeClaimsFailed"
	// ReasonRefused: the API server refuses PVCs of a template for good (a template it no
	// longer accepts, after an upgrade say): told once per template and cause, not per retry;
	// the reconcile retries with back-off, and the JobSet is left as it is.
	ReasonRefused = "VolumeClaimsRefused"
	// ReasonNotAdmitted: the JobSet has policies but was admitted while the webhook was not
	// running, so its pods do not mount the PVCs; nothing is created or deleted for it.
	ReasonNotAdmitted = "NotAdmitted"
	// ReasonInvalid: the policies annotation does not parse (it was admitted without the
	// validating webhook); nothing is created or deleted.
	ReasonInvalid = "InvalidPolicies"
)

// Event actions (events.k8s.io/v1 "action").
const (
	actionCreate  = "Create"
	actionDelete  = "Delete"
	actionReuse   = "Reuse"
	actionRelease = "Release"
	actionSkip    = "Skip"
	actionKeep    = "Keep"
)
