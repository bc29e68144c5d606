// Package sequence is the sequencer controller's name for package checks/sequencer of
// pkg/addon, where the reading of a JobSet's sequencing and start barrier lives, shared by the
// webhooks, the controller and kubectl jobset-addons lint. It declares nothing of its own.
package sequence

import (
	"github.com/jobset-addons/jobset-addons/pkg/addon/checks/sequencer"
)

type (
	// Barrier is sequencer.Barrier.
	Barrier = sequencer.Barrier
	// BarrierSettings is sequencer.BarrierSettings.
	BarrierSettings = sequencer.BarrierSettings
)

// The barrier container's default requests and limits (sequencer.DefaultBarrierCPURequest...).
var (
	DefaultBarrierCPURequest    = sequencer.DefaultBarrierCPURequest
	DefaultBarrierCPULimit      = sequencer.DefaultBarrierCPULimit
	DefaultBarrierMemoryRequest = sequencer.DefaultBarrierMemoryRequest
	DefaultBarrierMemoryLimit   = sequencer.DefaultBarrierMemoryLimit
)

// The functions of package sequencer the controller calls.
var (
	Admitted                = sequencer.Admitted
	BarrierGroups           = sequencer.BarrierGroups
	BarrierResources        = sequencer.BarrierResources
	DefaultBarrierResources = sequencer.DefaultBarrierResources
	GatedStages             = sequencer.GatedStages
	HasBarrier              = sequencer.HasBarrier
	HasGate                 = sequencer.HasGate
	Inject                  = sequencer.Inject
	InjectBarrier           = sequencer.InjectBarrier
	ReadBarrier             = sequencer.ReadBarrier
	ReplicatedJob           = sequencer.ReplicatedJob
	Sequences               = sequencer.Sequences
	Stages                  = sequencer.Stages
	Uses                    = sequencer.Uses
	UsesBarrier             = sequencer.UsesBarrier
)
