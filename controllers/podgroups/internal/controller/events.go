package controller

// Event reasons on the JobSet. They are stable: alerts and scripts may match on them.
const (
	// ReasonCreated: a PodGroup was created for a gang (the whole JobSet, or a released stage).
	ReasonCreated = "PodGroupCreated"
	// ReasonUpdated: a PodGroup's spec was brought in step with its JobSet (for example after
	// Kueue changed parallelism while the JobSet was suspended).
	ReasonUpdated = "PodGroupUpdated"
	// ReasonDeleted: a PodGroup was deleted because its JobSet or its stage finished, so that it
	// holds no queue.
	ReasonDeleted = "PodGroupDeleted"
	// ReasonFailed: creating, updating or deleting a PodGroup failed; the reconcile retries.
	ReasonFailed = "PodGroupFailed"
	// ReasonRefused: the API server refuses to create a gang object and will go on refusing it as
	// it is (addon.Refused: a policy or a schema an upgrade brought); the reconcile retries with
	// back-off, and the note is told once (addon.Tell folds its repeats into one series).
	ReasonRefused = "PodGroupsRefused"
	// ReasonNameTaken: a PodGroup (or CompositePodGroup) of the gang's name exists and is not
	// ours; it is left alone. One another JobSet's gang holds (names are joined with "-") is
	// named with that JobSet: the Job webhook holds the Jobs whose pods it would gang until it
	// is gone, and the JobSet is reconciled again every few seconds until then. One the add-on
	// did not make (a user's) is used as it is: the gang's pods are scheduled against it.
	ReasonNameTaken = "PodGroupNameTaken"
	// ReasonWorkloadCreated: the Workload (scheduling.k8s.io) of a JobSet gang-scheduled by
	// kube-scheduler was created, with one PodGroup template per gang.
	ReasonWorkloadCreated = "WorkloadCreated"
	// ReasonWorkloadUpdated: its templates' minCount followed a change of the JobSet.
	ReasonWorkloadUpdated = "WorkloadUpdated"
	// ReasonWorkloadDeleted: it was deleted because its JobSet finished (after its PodGroups).
	ReasonWorkloadDeleted = "WorkloadDeleted"
	// ReasonWorkloadNameTaken: a Workload of the JobSet's name exists and is not ours; it is left
	// alone and no PodGroup is made.
	ReasonWorkloadNameTaken = "WorkloadNameTaken"
	// ReasonNetworkTopologyDropped: the PodGroup CRD installed does not know
	// spec.networkTopology and dropped it (Volcano before network topology support).
	ReasonNetworkTopologyDropped = "NetworkTopologyDropped"
	// ReasonClaimsDropped: the apiserver dropped the per-Job claims from a kubernetes PodGroup
	// (no feature gate DRAWorkloadResourceClaims): each is reserved per pod instead.
	ReasonClaimsDropped = "PodGroupClaimsDropped"
	// ReasonCompositeCreated, ReasonCompositeDeleted: a composite gang's CompositePodGroup was
	// made, or deleted once the JobSet finished.
	ReasonCompositeCreated = "CompositePodGroupCreated"
	ReasonCompositeDeleted = "CompositePodGroupDeleted"
	// ReasonSchedulerNotInstalled: the JobSet asks for a scheduler whose PodGroup CRD was not
	// served when the controller started.
	ReasonSchedulerNotInstalled = "SchedulerNotInstalled"
	// ReasonNotAdmitted: the JobSet asks for gang scheduling but was created while the podgroups
	// mutating webhook was not running, so its pods name no PodGroup; none is made.
	ReasonNotAdmitted = "NotAdmitted"
	// ReasonInvalid: the podgroups annotations do not parse, or the stages cannot be computed
	// (the JobSet was admitted without the validating webhook); nothing is done.
	ReasonInvalid = "InvalidPodGroupSettings"
)

// Event actions (events.k8s.io/v1 "action").
const (
	actionCreate = "Create"
	actionUpdate = "Update"
	actionDelete = "Delete"
	actionSkip   = "Skip"
)
