package contract

import (
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Scheduler is the value of the SchedulerAnnotationKey annotation: whose PodGroup to create.
type Scheduler string

const (
	// SchedulerVolcano creates a Volcano PodGroup (scheduling.volcano.sh/v1beta1) and names it
	// in the pods' VolcanoGroupNameAnnotationKey annotation.
	SchedulerVolcano Scheduler = "volcano"
	// SchedulerCoscheduling creates a scheduler-plugins coscheduling PodGroup
	// (scheduling.x-k8s.io/v1alpha1) and names it in the pods' CoschedulingPodGroupLabelKey label.
	SchedulerCoscheduling Scheduler = "coscheduling"
	// SchedulerKubernetes creates Kubernetes' own Workload (WorkloadName) and PodGroups
	// (scheduling.k8s.io/v1beta1, feature gate GenericWorkload), gang-scheduled by kube-scheduler
	// itself, and names the PodGroup in the pods' spec.schedulingGroup.podGroupName.
	SchedulerKubernetes Scheduler = "kubernetes"
	// SchedulerKAI creates a KAI Scheduler PodGroup (scheduling.run.ai/v2alpha2, KAIPodGroupName)
	// and names it in the pods' KAIPodGroupAnnotationKey annotation.
	SchedulerKAI Scheduler = "kai"
)

var schedulers = []Scheduler{SchedulerVolcano, SchedulerCoscheduling, SchedulerKubernetes, SchedulerKAI}

// ParseScheduler parses the value of the SchedulerAnnotationKey annotation: volcano,
// coscheduling, kubernetes or kai. The empty value is refused.
func ParseScheduler(value string, path *field.Path) (Scheduler, field.ErrorList) {
	return parseEnum(value, path, schedulers, nil)
}

// NetworkTopologyMode is Volcano's NetworkTopologyMode.
type NetworkTopologyMode string

const (
	// NetworkTopologyHard: the gang must be placed within HighestTierAllowed.
	NetworkTopologyHard NetworkTopologyMode = "hard"
	// NetworkTopologySoft: the scheduler tries to, but may place the gang wider.
	NetworkTopologySoft NetworkTopologyMode = "soft"

	// DefaultNetworkTopologyMode is Volcano's default mode.
	DefaultNetworkTopologyMode = NetworkTopologyHard
)

var networkTopologyModes = []NetworkTopologyMode{NetworkTopologyHard, NetworkTopologySoft}

// NetworkTopology is the value of the NetworkTopologyAnnotationKey annotation: the shape of
// Volcano's NetworkTopologySpec (scheduling.volcano.sh/v1beta1), written here without importing
// Volcano. podgroups copies it into the PodGroup's spec.networkTopology.
type NetworkTopology struct {
	// Mode is hard or soft. Default hard, as in Volcano.
	Mode NetworkTopologyMode `json:"mode"`
	// HighestTierAllowed is the highest HyperNode tier the gang may span, at least 1. Unset
	// leaves Volcano's own default.
	HighestTierAllowed *int `json:"highestTierAllowed,omitempty"`
}

// ParseNetworkTopology parses the value of the NetworkTopologyAnnotationKey annotation, a YAML or
// JSON object {mode, highestTierAllowed}, strictly (see README.md), with the mode defaulted.
// The empty value is refused.
func ParseNetworkTopology(value string, path *field.Path) (NetworkTopology, field.ErrorList) {
	var nt *NetworkTopology
	decodeErrs := decodeStrict(value, path, &nt)
	if nt == nil {
		if len(decodeErrs) == 0 {
			decodeErrs = append(decodeErrs, field.Required(path, "must be an object {mode, highestTierAllowed}"))
		}
		return NetworkTopology{}, decodeErrs
	}
	var errs field.ErrorList
	if nt.Mode == "" {
		nt.Mode = DefaultNetworkTopologyMode
	} else {
		_, merrs := parseEnum(string(nt.Mode), path.Child("mode"), networkTopologyModes, nil)
		errs = append(errs, merrs...)
	}
	if nt.HighestTierAllowed != nil && *nt.HighestTierAllowed < 1 {
		errs = append(errs, field.Invalid(path.Child("highestTierAllowed"), *nt.HighestTierAllowed, "must be at least 1"))
	}
	return *nt, joinErrors(decodeErrs, errs)
}

// ParseTopologyKey parses the value of the TopologyKeyAnnotationKey annotation: a node label
// key (a qualified name, with an optional DNS subdomain prefix). The empty value is refused.
func ParseTopologyKey(value string, path *field.Path) (string, field.ErrorList) {
	if value == "" {
		return "", field.ErrorList{field.Required(path, "must be a node label key, such as topology.kubernetes.io/zone")}
	}
	var errs field.ErrorList
	for _, msg := range validation.IsQualifiedName(value) {
		errs = append(errs, field.Invalid(path, value, msg))
	}
	return value, errs
}

// ParseScheduleTimeout parses the value of the ScheduleTimeoutAnnotationKey annotation: a
// positive whole number of seconds that fits an int32 (the PodGroup's scheduleTimeoutSeconds).
func ParseScheduleTimeout(value string, path *field.Path) (int32, field.ErrorList) {
	n, err := strconv.ParseInt(strings.TrimSpace(value), 10, 32)
	if err != nil {
		return 0, field.ErrorList{field.Invalid(path, value, "must be a whole number of seconds")}
	}
	if n < 1 {
		return 0, field.ErrorList{field.Invalid(path, value, "must be positive")}
	}
	return int32(n), nil
}

// ParseComposite parses the value of the CompositeAnnotationKey annotation: "true" or "false".
func ParseComposite(value string, path *field.Path) (bool, field.ErrorList) {
	switch value {
	case EnabledValue:
		return true, nil
	case "false":
		return false, nil
	}
	return false, field.ErrorList{field.NotSupported(path, value, []string{EnabledValue, "false"})}
}
