// Package contract is the only thing the jobset-addons controllers share: the labels,
// annotations and scheduling gate they put on JobSets, Jobs, Pods and the objects they create,
// the value types of the structured annotations with their strict parsers, the name builders
// of created objects, and Stages, which turns sequencing annotations into ordered stages.
//
// It is a leaf module: it imports only the standard library, k8s.io/api, k8s.io/apimachinery,
// sigs.k8s.io/yaml and sigs.k8s.io/json, so that any controller, webhook or test can import it
// cheaply. A controller never re-derives a key or a name: it uses the constants and functions
// here. README.md in this directory lists every rule of the contract as a table.
package contract

import batchv1 "k8s.io/api/batch/v1"

// Domain is the DNS domain under which every key of jobset-addons lives. Each controller owns the
// subdomain of its name (volumeclaims.jobset-addons.io, resourceclaims.jobset-addons.io, ...).
const Domain = "jobset-addons.io"

// EnabledValue is the value of every jobset-addons label or annotation that acts as a flag:
// the scope labels that webhook objectSelectors match on and the admission marker.
const EnabledValue = "true"

// Ownership.
const (
	// ManagedByLabelKey is the Kubernetes recommended label on every object an add-on creates
	// (PVCs, ResourceClaims, PodGroups). Written by the controller that creates the object, with
	// that controller's ...ManagedByValue. An add-on deletes only objects carrying its own value,
	// never a user's object that happens to have the same name.
	ManagedByLabelKey = "app.kubernetes.io/managed-by"

	// VolumeClaimsManagedByValue is the ManagedByLabelKey value of PVCs created by volumeclaims.
	VolumeClaimsManagedByValue = "volumeclaims." + Domain
	// ResourceClaimsManagedByValue is the ManagedByLabelKey value of ResourceClaims created by
	// resourceclaims.
	ResourceClaimsManagedByValue = "resourceclaims." + Domain
	// SequencerManagedByValue is the ManagedByLabelKey value of anything created by the sequencer.
	SequencerManagedByValue = "sequencer." + Domain
	// PodGroupsManagedByValue is the ManagedByLabelKey value of PodGroups created by podgroups.
	PodGroupsManagedByValue = "podgroups." + Domain
)

// Upstream keys. These are JobSet's and batch/v1's own keys, redeclared here so that no
// controller needs to import sigs.k8s.io/jobset to read them.
const (
	// JobSetControllerManagedBy is the value of a JobSet's spec.managedBy that names upstream
	// JobSet's own controller (JobSet's JobSetControllerName). A JobSet whose spec.managedBy is
	// unset or this value is the cluster's to act on; any other value names a controller that
	// runs the JobSet elsewhere (MultiKueue's manager cluster keeps such copies, with
	// `kueue.x-k8s.io/multikueue`), and no add-on acts on it here (ManagedElsewhere).
	JobSetControllerManagedBy = "jobset.sigs.k8s.io/jobset-controller"
	// JobSetNameLabelKey is upstream JobSet's label holding the JobSet name. JobSet writes it on
	// Jobs and Pods; the add-ons also write it on every object they create (PVCs, ResourceClaims,
	// PodGroups), so that `kubectl get pvc -l jobset.sigs.k8s.io/jobset-name=NAME` works.
	JobSetNameLabelKey = "jobset.sigs.k8s.io/jobset-name"

	// JobSetUIDLabelKey is upstream JobSet's label holding the JobSet's UID, written by JobSet on
	// Jobs and Pods. volumeclaims deletes only pods that carry the UID of the JobSet at hand.
	JobSetUIDLabelKey = "jobset.sigs.k8s.io/jobset-uid"

	// ReplicatedJobNameLabelKey is upstream JobSet's label holding the ReplicatedJob name, written
	// by JobSet on Jobs and Pods. The sequencer releases a stage's pods by it.
	ReplicatedJobNameLabelKey = "jobset.sigs.k8s.io/replicatedjob-name"

	// JobIndexLabelKey is upstream JobSet's label holding the index of a Job within its
	// ReplicatedJob (0..replicas-1), written by JobSet on Jobs and Pods. The volumeclaims Pod
	// webhook reads it to build a per-pod PVC name.
	JobIndexLabelKey = "jobset.sigs.k8s.io/job-index"

	// RestartAttemptAnnotationKey is upstream JobSet's restart counter (JobSet status.restarts
	// when the Job was created), written by JobSet both as an annotation and as a label on Jobs
	// and Pods. resourceclaims reads it to name a Job's claims; the sequencer to consider only
	// Jobs of the current attempt.
	RestartAttemptAnnotationKey = "jobset.sigs.k8s.io/restart-attempt"
	// RestartAttemptLabelKey is the same key as RestartAttemptAnnotationKey, used as a label.
	RestartAttemptLabelKey = RestartAttemptAnnotationKey

	// JobCompletionIndexAnnotationKey is batch/v1's completion index of a Pod of an Indexed Job,
	// written by the Job controller as an annotation (and, since Kubernetes 1.28, also as a
	// label) on Pods. The volumeclaims Pod webhook reads it to build a per-pod PVC name.
	JobCompletionIndexAnnotationKey = batchv1.JobCompletionIndexAnnotation
	// JobCompletionIndexLabelKey is the same key as JobCompletionIndexAnnotationKey, used as a label.
	JobCompletionIndexLabelKey = JobCompletionIndexAnnotationKey

	// KueueQueueNameLabelKey is Kueue's label naming the LocalQueue of a job (sigs.k8s.io/kueue,
	// constants.QueueLabel), written here: Kueue's module is built on another Kubernetes. A
	// JobSet that carries it is queued by Kueue; resourceclaims and the sequencer warn at its
	// admission of what Kueue does not see.
	KueueQueueNameLabelKey = "kueue.x-k8s.io/queue-name"
)

// volumeclaims.
const (
	// PoliciesAnnotationKey is the JobSet annotation, written by the user, that holds a list of
	// VolumeClaimPolicy (YAML or JSON). Parse it with ParseVolumeClaimPolicies.
	PoliciesAnnotationKey = "volumeclaims." + Domain + "/policies"

	// VolumeClaimTemplateLabelKey is a label on every PVC created by volumeclaims, written by it:
	// the name of the template (the volume name) the PVC was made from.
	VolumeClaimTemplateLabelKey = "volumeclaims." + Domain + "/template"
	// VolumeClaimReplicatedJobLabelKey is a label on every per-pod PVC created by volumeclaims,
	// written by it: the ReplicatedJob whose pod mounts it. Absent on shared PVCs.
	VolumeClaimReplicatedJobLabelKey = "volumeclaims." + Domain + "/replicatedjob"
	// VolumeClaimJobIndexLabelKey is a label on every per-pod PVC created by volumeclaims, written
	// by it: the Job index (jobset.sigs.k8s.io/job-index) of the pod that mounts it.
	VolumeClaimJobIndexLabelKey = "volumeclaims." + Domain + "/job-index"
	// VolumeClaimPodIndexLabelKey is a label on every per-pod PVC created by volumeclaims, written
	// by it: the completion index (batch.kubernetes.io/job-completion-index) of the pod that
	// mounts it.
	VolumeClaimPodIndexLabelKey = "volumeclaims." + Domain + "/pod-index"

	// VolumeClaimsPerPodLabelKey is a pod-template label (value EnabledValue), written by the
	// volumeclaims JobSet webhook on the pod templates of ReplicatedJobs that get per-pod PVCs.
	// The volumeclaims Pod webhook's matchConditions reach the pods that carry it (or
	// VolumeClaimsSharedVolumesAnnotationKey), so no other pod reaches it.
	VolumeClaimsPerPodLabelKey = "volumeclaims." + Domain + "/per-pod"

	// VolumeClaimsPerPodVolumesAnnotationKey is a pod-template annotation, written by the
	// volumeclaims JobSet webhook beside VolumeClaimsPerPodLabelKey: the comma-separated names of
	// the per-pod templates (volumes) that the Pod webhook adds to each pod, so that the Pod
	// webhook needs nothing but the pod itself.
	VolumeClaimsPerPodVolumesAnnotationKey = "volumeclaims." + Domain + "/per-pod-volumes"

	// VolumeClaimsSharedVolumesAnnotationKey is a pod-template annotation, written by the
	// volumeclaims JobSet webhook on the pod templates that mount a shared template: the
	// comma-separated names of those templates (volumes). The volumeclaims Pod webhook's
	// matchConditions reach the pods that carry it, and it denies a pod whose shared PVC exists
	// and is another JobSet's, so that the pod never mounts that JobSet's data.
	VolumeClaimsSharedVolumesAnnotationKey = "volumeclaims." + Domain + "/shared-volumes"

	// VolumeClaimJobSetUIDAnnotationKey is an annotation on every PVC volumeclaims creates: the UID
	// of the JobSet it was created for, so that a PVC left by an earlier JobSet of the same name
	// is told apart from one made for this one.
	VolumeClaimJobSetUIDAnnotationKey = "volumeclaims." + Domain + "/jobset-uid"

	// VolumeClaimExpireAfterUnusedAnnotationKey is an annotation on a PVC volumeclaims creates or
	// reuses for a policy with retentionPolicy.expireAfterUnused, written by it: that duration,
	// so that the PVC expires by it after its JobSet is gone.
	VolumeClaimExpireAfterUnusedAnnotationKey = "volumeclaims." + Domain + "/expire-after-unused"
	// VolumeClaimClaimedAtAnnotationKey is an annotation on every PVC volumeclaims creates or
	// reuses, written by it: when (RFC 3339) the JobSet of VolumeClaimJobSetUIDAnnotationKey took
	// it. The expiry clock never starts before it: a reuse restarts the clock.
	VolumeClaimClaimedAtAnnotationKey = "volumeclaims." + Domain + "/claimed-at"
	// VolumeClaimUnusedSinceAnnotationKey is an annotation on a PVC with an expiry, written by
	// volumeclaims only where Kubernetes sets no Unused condition on PVCs (the feature gate
	// PersistentVolumeClaimUnusedSinceTime off): since when (RFC 3339) it saw no pod use it.
	VolumeClaimUnusedSinceAnnotationKey = "volumeclaims." + Domain + "/unused-since"
	// VolumeClaimFirstSeenAnnotationKey is an annotation on a PVC with an expiry, written by
	// volumeclaims the first time its expiry looks at the PVC: when (RFC 3339) and the PVC's UID,
	// space-separated (VolumeClaimFirstSeenValue). The expiry clock never starts before it; one
	// that names another UID (the PVC was restored from a backup, which makes a new object) is
	// not the add-on's sight of this PVC and is written again.
	VolumeClaimFirstSeenAnnotationKey = "volumeclaims." + Domain + "/first-seen"

	// VolumeClaimsPlaceholderClaimName is the claimName of the volume that the volumeclaims JobSet
	// webhook puts in a targeted pod template for each per-pod template (a Job's pod template
	// must name a volume for every volumeMount). The Pod webhook replaces it with the pod's own
	// PVC; a pod that somehow kept it waits for a PVC that never exists, rather than run
	// without its volume.
	VolumeClaimsPlaceholderClaimName = "volumeclaims." + Domain + "-per-pod"

	// VolumeClaimsAdmittedAnnotationKey is a JobSet annotation (value EnabledValue), written by the
	// volumeclaims mutating webhook once it has injected the shared volumes and scope labels into
	// the pod templates, so that the reconciler can tell such a JobSet from one admitted while the
	// webhook was not running.
	VolumeClaimsAdmittedAnnotationKey = "volumeclaims." + Domain + "/admitted"
)

// resourceclaims.
const (
	// TemplatesAnnotationKey is an annotation on spec.replicatedJobs[].template.metadata (so that it
	// lands on each Job), written by the user: a list of ResourceClaimTemplate (YAML or JSON).
	// Parse it with ParseResourceClaimTemplates. The resourceclaims Job webhook is scoped by it:
	// objectSelector on JobSetNameLabelKey, matchConditions on this annotation of the Job. So no
	// label needs writing at JobSet admission, and a JobSet admitted while the add-on was down
	// still cannot get a Job created without its claims.
	TemplatesAnnotationKey = "resourceclaims." + Domain + "/templates"

	// ResourceClaimTemplateLabelKey is a label on every ResourceClaim created by resourceclaims,
	// written by it: the name of the template the claim was made from.
	ResourceClaimTemplateLabelKey = "resourceclaims." + Domain + "/template"

	// ResourceClaimsRetryAnnotationKey is a JobSet annotation, written by the resourceclaims
	// controller: when (RFC 3339) a ResourceClaim that another Job held under the name of one of
	// the JobSet's Jobs' claims went. The write makes JobSet's controller reconcile the JobSet at
	// once, and create the Job the Job webhook refused meanwhile, rather than after its
	// back-off. Nothing reads its value.
	ResourceClaimsRetryAnnotationKey = "resourceclaims." + Domain + "/retry"
)

// sequencer.
const (
	// ExecutionPolicyAnnotationKey is a JobSet annotation, written by the user: ExecutionPolicyInOrder
	// makes each ReplicatedJob wait for the one before it. Parse it with ParseExecutionPolicy.
	ExecutionPolicyAnnotationKey = "sequencer." + Domain + "/execution-policy"

	// WaitForAnnotationKey is a JobSet annotation, written by the user: the status (Complete, the
	// default, or Ready) a predecessor must reach, for execution-policy InOrder and for depends-on
	// entries that name no status. Parse it with ParseWaitFor.
	WaitForAnnotationKey = "sequencer." + Domain + "/wait-for"

	// DependsOnAnnotationKey is an annotation on spec.replicatedJobs[].template.metadata, written by
	// the user: the list of predecessors of that ReplicatedJob (fan-in). Parse it with ParseDependsOn.
	DependsOnAnnotationKey = "sequencer." + Domain + "/depends-on"

	// ReleasedAnnotationKey is a JobSet annotation written by the sequencer controller (users read
	// it, never write it): the ReplicatedJobs whose pods it has released in the current restart
	// attempt, as JSON such as {"restartAttempt":0,"replicatedJobs":["node"]}. Parse it with
	// ParseReleased, write it with Released.String. podgroups creates a gated stage's PodGroup
	// only once Released.StageReleased says so for the current attempt.
	ReleasedAnnotationKey = "sequencer." + Domain + "/released"

	// SequencerSchedulingGateValue is the name of the pod scheduling gate
	// (spec.schedulingGates[].name) that holds back the pods of a stage that is not released yet.
	// The sequencer JobSet webhook adds it to the pod templates; the sequencer controller removes
	// it from the pods once their stage is released.
	SequencerSchedulingGateValue = "sequencer." + Domain + "/waiting"

	// SequencerGatedLabelKey is a pod-template label (value EnabledValue), written by the sequencer
	// JobSet webhook on the pod templates it gates, so that the controller watches only those pods.
	// The controller removes it from a pod with the gate, so that it caches only those still gated.
	SequencerGatedLabelKey = "sequencer." + Domain + "/gated"

	// StartBarrierAnnotationKey is a JobSet annotation, written by the user: no main container of
	// the JobSet (StartBarrierJobSet) or of each of its stages (StartBarrierStage) starts until
	// every pod of it waits at the barrier, bound and with its earlier init containers done. On a
	// JobSet that runs in more than one stage both values mean a barrier per stage. Parse it with
	// ParseStartBarrier.
	StartBarrierAnnotationKey = "sequencer." + Domain + "/start-barrier"

	// StartBarrierTimeoutAnnotationKey is a JobSet annotation, written by the user: how long (a Go
	// duration, DefaultStartBarrierTimeout when absent) a barrier may stay closed after its first
	// pod reached it; then its waiting pods fail with the names of the pods still missing. Parse
	// it with ParseStartBarrierTimeout.
	StartBarrierTimeoutAnnotationKey = "sequencer." + Domain + "/start-barrier-timeout"

	// StartBarrierOpenedAnnotationKey is a JobSet annotation written by the sequencer controller
	// (users read it, never write it): the barriers it opened in the current restart attempt and
	// run, as JSON such as {"restartAttempt":0,"run":"","groups":["stage-0"]} (BarriersOpened). A
	// pod of an opened barrier, a new one too, is opened at once; a record of another attempt or
	// run (the JobSet was suspended and resumed since) counts as none.
	StartBarrierOpenedAnnotationKey = "sequencer." + Domain + "/start-barrier-opened"

	// StartBarrierLabelKey is a pod-template label (value EnabledValue), written by the sequencer
	// JobSet webhook on every pod template it adds the barrier to, so that the controller watches
	// only those pods.
	StartBarrierLabelKey = "sequencer." + Domain + "/barrier"

	// StartBarrierStateAnnotationKey is a pod annotation written by the sequencer controller: absent
	// while the pod waits, StartBarrierOpen once its barrier opened, StartBarrierFailedPrefix and
	// the reason when it timed out. The barrier init container reads it from a downwardAPI volume.
	StartBarrierStateAnnotationKey = "sequencer." + Domain + "/barrier-state"

	// StartBarrierNudgeAnnotationKey is a pod annotation written by the sequencer controller: how
	// many times it told a pod again (a count, "1", "2", ...) because the pod still waited at its
	// barrier seconds after its barrier-state was written. Its only purpose is to be a change of
	// the pod that the kubelet acts on: an update makes the kubelet rewrite the pod's downwardAPI
	// files, and a rewrite it lost (docs/sequencer.md, "When a pod is told again") is done again.
	StartBarrierNudgeAnnotationKey = "sequencer." + Domain + "/barrier-nudge"

	// StartBarrierContainerName is the name of the init container, and of its downwardAPI volume,
	// that the sequencer JobSet webhook appends after the user's init containers.
	StartBarrierContainerName = "jobset-addons-start-barrier"
)

// podgroups.
const (
	// SchedulerAnnotationKey is a JobSet annotation, written by the user: which gang scheduler's
	// PodGroup to create (SchedulerVolcano, SchedulerCoscheduling, SchedulerKubernetes or
	// SchedulerKAI). Parse it with ParseScheduler.
	SchedulerAnnotationKey = "podgroups." + Domain + "/scheduler"

	// VolcanoQueueNameAnnotationKey is Volcano's own key, reused as a JobSet annotation written by
	// the user: the Volcano or KAI queue of the JobSet's PodGroups. Unset means the chart's
	// default queue of that scheduler.
	VolcanoQueueNameAnnotationKey = "scheduling.volcano.sh/queue-name"

	// NetworkTopologyAnnotationKey is a JobSet annotation, written by the user: the Volcano
	// NetworkTopologySpec of the JobSet's PodGroups. Parse it with ParseNetworkTopology.
	NetworkTopologyAnnotationKey = "podgroups." + Domain + "/network-topology"

	// TopologyKeyAnnotationKey is a JobSet annotation, written by the user, for
	// SchedulerKubernetes only: a node label key (such as topology.kubernetes.io/zone, or a
	// rack label) whose one value each gang's pods must all share. podgroups writes it as the
	// gang's schedulingConstraints.topology[0].key, read by kube-scheduler where the feature gate
	// TopologyAwareWorkloadScheduling (alpha) is on. Parse it with ParseTopologyKey.
	TopologyKeyAnnotationKey = "podgroups." + Domain + "/topology-key"

	// CompositeAnnotationKey is a JobSet annotation, written by the user, for SchedulerKubernetes
	// only: "true" gangs each Job on its own, as a PodGroup named as the Job (JobPodGroupName)
	// whose pods may be held to one domain of TopologyKeyAnnotationKey, while a CompositePodGroup
	// (scheduling.k8s.io/v1beta1 from Kubernetes 1.38, v1alpha3 in 1.37; feature gate
	// CompositePodGroup) of the gang's name keeps
	// the gang all-or-nothing: every Job of it placed, or none. Parse it with ParseComposite.
	CompositeAnnotationKey = "podgroups." + Domain + "/composite"

	// PerJobPodGroupAnnotationKey is an annotation on spec.replicatedJobs[].template.metadata
	// (value EnabledValue), written by the podgroups JobSet webhook when CompositeAnnotationKey is
	// "true", so that it lands on each Job: the podgroups Job webhook then names the Job's own
	// PodGroup (JobPodGroupName) in the Job's pod template (spec.schedulingGroup.podGroupName).
	PerJobPodGroupAnnotationKey = "podgroups." + Domain + "/per-job"

	// GangAnnotationKey is an annotation on spec.replicatedJobs[].template.metadata, written by
	// the podgroups JobSet webhook on every ReplicatedJob it gangs, so that it lands on each Job:
	// the name of the Job's gang (its PodGroup, or its CompositePodGroup). The podgroups Job
	// webhook sees only Jobs that carry it (or PerJobPodGroupAnnotationKey), and holds one whose
	// gang object another JobSet holds.
	GangAnnotationKey = "podgroups." + Domain + "/gang"

	// ScheduleTimeoutAnnotationKey is a JobSet annotation, written by the user, for the
	// coscheduling scheduler only: the PodGroup's scheduleTimeoutSeconds, how long a gang's pods
	// wait in the scheduler's Permit stage for the rest of the gang. Parse it with
	// ParseScheduleTimeout.
	ScheduleTimeoutAnnotationKey = "podgroups." + Domain + "/schedule-timeout-seconds"

	// PodGroupsRetryAnnotationKey is a JobSet annotation, written by the podgroups controller:
	// when (RFC 3339) a gang object (PodGroup, Workload, CompositePodGroup) made for another
	// JobSet under the name of one of the JobSet's gangs went. The write makes JobSet's
	// controller reconcile the JobSet at once, and create (or resume) the Job the Job webhook
	// held meanwhile, rather than after its back-off. Nothing reads its value.
	PodGroupsRetryAnnotationKey = "podgroups." + Domain + "/retry"

	// VolcanoGroupNameAnnotationKey is Volcano's pod annotation naming the pod's PodGroup, written
	// by the podgroups JobSet webhook on the pod templates.
	VolcanoGroupNameAnnotationKey = "scheduling.k8s.io/group-name"

	// VolcanoTaskSpecAnnotationKey is Volcano's pod annotation naming the pod's task (role) within
	// its PodGroup, written by the podgroups JobSet webhook on the pod templates where the user
	// wrote none: the ReplicatedJob's name. The PodGroup's spec.minTaskMember holds, per task,
	// how many of its pods must be placed with the rest of the gang.
	VolcanoTaskSpecAnnotationKey = "volcano.sh/task-spec"

	// CoschedulingPodGroupLabelKey is scheduler-plugins coscheduling's pod label naming the pod's
	// PodGroup, written by the podgroups JobSet webhook on the pod templates. Being a label, its
	// value (the PodGroup name) must also be a valid label value (63 characters at most).
	CoschedulingPodGroupLabelKey = "scheduling.x-k8s.io/pod-group"

	// KAIPodGroupAnnotationKey is KAI Scheduler's pod annotation naming the pod's PodGroup, written
	// by the podgroups JobSet webhook on the pod templates.
	KAIPodGroupAnnotationKey = "pod-group-name"

	// KAISubGroupLabelKey is KAI Scheduler's pod label naming the pod's subGroup of its PodGroup,
	// written by the podgroups JobSet webhook on the pod templates: the ReplicatedJob's name.
	KAISubGroupLabelKey = "kai.scheduler/subgroup-name"

	// KAIQueueLabelKey is KAI Scheduler's pod label naming the pod's queue, written by the
	// podgroups JobSet webhook on the pod templates (KAI's pod grouper reads it).
	KAIQueueLabelKey = "kai.scheduler/queue"

	// PodGroupStageLabelKey is a label on every PodGroup created by podgroups for a sequenced
	// JobSet, written by it: the stage index (decimal) the PodGroup gangs.
	PodGroupStageLabelKey = "podgroups." + Domain + "/stage"

	// PodGroupSpecHashAnnotationKey is an annotation on every PodGroup (and, for
	// SchedulerKubernetes, Workload) created by podgroups, written by it: a hash of the spec it
	// last wrote, so that it updates one only when the JobSet's demand changed (and not forever
	// when a PodGroup CRD drops a field it does not know, such as Volcano v1.10's without
	// networkTopology, or the apiserver adds one, such as the priority it resolves).
	PodGroupSpecHashAnnotationKey = "podgroups." + Domain + "/spec-hash"
)
