package framework

import (
	"github.com/jobset-addons/jobset-addons/e2e/repo"
	"github.com/jobset-addons/jobset-addons/e2e/testbed"
)

// What the suites use of the testbed, through this package alone: a suite imports framework,
// and framework alone knows which cluster a name comes from.

// Config is a testbed's: where its binaries, kubeconfig and processes are.
type Config = testbed.Config

// KueueOptions say how Kueue runs beside the testbed (StartKueue).
type KueueOptions = testbed.KueueOptions

// KueueWaitForPodsReady is Kueue's waitForPodsReady section (KueueOptions.WaitForPodsReady).
type KueueWaitForPodsReady = testbed.KueueWaitForPodsReady

// KAIOptions say how KAI Scheduler runs beside the testbed (StartKAI).
type KAIOptions = testbed.KAIOptions

// AddonReplicas are the processes of an add-on started as several replicas (StartAddonReplicas).
type AddonReplicas = testbed.AddonReplicas

// The testbed's own keys and names that suites write into their objects.
const (
	// DelayAnnotationKey is how long a kwok pod runs before it completes.
	DelayAnnotationKey = testbed.DelayAnnotationKey
	// FailAnnotationKey makes a kwok pod fail instead of completing.
	FailAnnotationKey = testbed.FailAnnotationKey
	// FailFirstAttemptAnnotationKey makes a kwok pod of the first restart attempt fail.
	FailFirstAttemptAnnotationKey = testbed.FailFirstAttemptAnnotationKey
	// BarrierDeafAnnotationKey keeps a kwok pod at its start barrier until it is told open twice.
	BarrierDeafAnnotationKey = testbed.BarrierDeafAnnotationKey
	// BarrierWaitingReasonAnnotationKey shows a kwok pod's barrier container waiting with that reason (a kubelet that cannot start it).
	BarrierWaitingReasonAnnotationKey = testbed.BarrierWaitingReasonAnnotationKey
	// AddonNamespace is where the add-ons' Services and Secrets are.
	AddonNamespace = testbed.AddonNamespace
	// VolcanoSchedulerName and CoschedulingSchedulerName are the gang schedulers' names.
	VolcanoSchedulerName      = testbed.VolcanoSchedulerName
	CoschedulingSchedulerName = testbed.CoschedulingSchedulerName
	// KAISchedulerName is KAI Scheduler's; KAIDefaultQueue the testbed's leaf queue (under
	// KAIParentQueue).
	KAISchedulerName = testbed.KAISchedulerName
	KAIDefaultQueue  = testbed.KAIDefaultQueue
	KAIParentQueue   = testbed.KAIParentQueue
	// The node labels of the testbed's topology (StartKueue).
	TopologyBlockLabel = testbed.TopologyBlockLabel
	TopologyRackLabel  = testbed.TopologyRackLabel
	TopologyHostLabel  = testbed.TopologyHostLabel
	// The JobSet versions that brought what a suite needs.
	ElasticJobSetSince  = testbed.ElasticJobSetSince
	DependsOnFanInSince = testbed.DependsOnFanInSince
	// KueueNamespace is the namespace Kueue's Configuration names (MultiKueue's Secrets go there).
	KueueNamespace = testbed.KueueNamespace
	// TrainerVersion is the Kubeflow Trainer the testbed runs.
	TrainerVersion = testbed.TrainerVersion
)

// Addons are the four add-ons, in the order they start.
var Addons = testbed.Addons

// The testbed's operations the suites call.
var (
	DefaultConfig       = testbed.DefaultConfig
	Up                  = testbed.Up
	Down                = testbed.Down
	RepoRoot            = repo.Root
	StartAddon          = testbed.StartAddon
	StartAddonReplicas  = testbed.StartAddonReplicas
	StopAddon           = testbed.StopAddon
	KillAddon           = testbed.KillAddon
	PauseProcess        = testbed.PauseProcess
	ResumeProcess       = testbed.ResumeProcess
	StartGangSchedulers = testbed.StartGangSchedulers
	InstallGangCRDs     = testbed.InstallGangCRDs
	StartKAI            = testbed.StartKAI
	StopKAIPodGrouper   = testbed.StopKAIPodGrouper
	StartKueue          = testbed.StartKueue
	StopKueue           = testbed.StopKueue
	KueueGVR            = testbed.KueueGVR
	StartTrainer        = testbed.StartTrainer
	StopTrainer         = testbed.StopTrainer
	PublishDevices      = testbed.PublishDevices
	AddNode             = testbed.AddNode
	PartitionNode       = testbed.PartitionNode
	TaintNode           = testbed.TaintNode
	ApplyPolicies       = testbed.ApplyPolicies
	DeletePolicies      = testbed.DeletePolicies
	EditInEtcd          = testbed.EditInEtcd
	AuditCreates        = testbed.AuditCreates
	ServingCert         = testbed.ServingCert
)
