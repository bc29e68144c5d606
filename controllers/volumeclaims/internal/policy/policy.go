// Package policy is the volumeclaims controller's name for package checks/volumeclaims of
// pkg/addon, where the reading of a JobSet's volume claim policies lives, shared by the
// webhooks, the controller and kubectl jobset-addons lint. It declares nothing of its own.
package policy

import (
	"github.com/jobset-addons/jobset-addons/pkg/addon/checks/volumeclaims"
)

// Claim is volumeclaims.Claim.
type Claim = volumeclaims.Claim

// The functions of package volumeclaims the controller calls.
var (
	Claims           = volumeclaims.Claims
	ExpiryAnnotation = volumeclaims.ExpiryAnnotation
	OwnerReference   = volumeclaims.OwnerReference
	Parse            = volumeclaims.Parse
	ReplicatedJob    = volumeclaims.ReplicatedJob
	Uses             = volumeclaims.Uses
)
