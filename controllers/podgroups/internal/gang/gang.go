// Package gang is the podgroups controller's name for package checks/podgroups of pkg/addon,
// where the reading of a JobSet's gang settings and gangs lives, shared by the webhooks, the
// controller and kubectl jobset-addons lint. It declares nothing of its own.
package gang

import (
	"github.com/jobset-addons/jobset-addons/pkg/addon/checks/podgroups"
)

type (
	// Gang is podgroups.Gang.
	Gang = podgroups.Gang
	// Settings is podgroups.Settings.
	Settings = podgroups.Settings
	// PriorityClassReader is podgroups.PriorityClassReader.
	PriorityClassReader = podgroups.PriorityClassReader
)

// ImmutableKeys are podgroups.ImmutableKeys.
var ImmutableKeys = podgroups.ImmutableKeys

// The functions of package podgroups the controller calls.
var (
	Gangs          = podgroups.Gangs
	Parse          = podgroups.Parse
	PodsPerJob     = podgroups.PodsPerJob
	Read           = podgroups.Read
	StageLabel     = podgroups.StageLabel
	TemplateClaims = podgroups.TemplateClaims
	TrainJobOwner  = podgroups.TrainJobOwner
	Units          = podgroups.Units
	Uses           = podgroups.Uses
)
