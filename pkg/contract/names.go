package contract

import (
	"fmt"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// MaxNameLength is the longest object name the name builders return: a DNS-1123 subdomain.
const MaxNameLength = validation.DNS1123SubdomainMaxLength

// NameError is returned by the name builders when the name they would build is not a valid
// object name. Webhooks report it at the field that contributed the name.
type NameError struct {
	// Object is what the name was for, e.g. "per-pod PersistentVolumeClaim".
	Object string
	// Name is the name that was refused.
	Name string
	// Problems says what is wrong with it.
	Problems []string
}

func (e *NameError) Error() string {
	return fmt.Sprintf("%s name %q is not valid: %s", e.Object, e.Name, strings.Join(e.Problems, "; "))
}

// checkName returns name, or a *NameError if it is not a DNS-1123 subdomain of at most
// MaxNameLength characters.
func checkName(object, name string) (string, error) {
	var problems []string
	if len(name) > MaxNameLength {
		problems = append(problems, fmt.Sprintf("it is %d characters long, more than the %d allowed", len(name), MaxNameLength))
	}
	for _, msg := range validation.IsDNS1123Subdomain(name) {
		if len(name) > MaxNameLength && strings.Contains(msg, strconv.Itoa(MaxNameLength)) {
			continue // the length, already said
		}
		problems = append(problems, msg)
	}
	if problems != nil {
		return "", &NameError{Object: object, Name: name, Problems: problems}
	}
	return name, nil
}

func checkIndex(object, what string, i int) error {
	if i < 0 {
		return &NameError{Object: object, Problems: []string{fmt.Sprintf("%s %d is negative", what, i)}}
	}
	return nil
}

// PerPodVolumeClaimName is the name of the PVC made from template claim for the pod of the
// JobSet's ReplicatedJob with the given Job index (jobset.sigs.k8s.io/job-index) and completion
// index (batch.kubernetes.io/job-completion-index):
// <claim>-<jobset>-<replicatedJob>-<jobIndex>-<completionIndex>.
func PerPodVolumeClaimName(claim, jobSet, replicatedJob string, jobIndex, completionIndex int) (string, error) {
	const object = "per-pod PersistentVolumeClaim"
	if err := checkIndex(object, "job index", jobIndex); err != nil {
		return "", err
	}
	if err := checkIndex(object, "completion index", completionIndex); err != nil {
		return "", err
	}
	return checkName(object, fmt.Sprintf("%s-%s-%s-%d-%d", claim, jobSet, replicatedJob, jobIndex, completionIndex))
}

// SharedVolumeClaimName is the name of the PVC made from template claim and shared by all
// ReplicatedJobs of the JobSet: <claim>-<jobset>.
func SharedVolumeClaimName(claim, jobSet string) (string, error) {
	return checkName("shared PersistentVolumeClaim", claim+"-"+jobSet)
}

// ResourceClaimName is the name of the ResourceClaim made from template for the Job: <job>-<template>,
// or <job>-r<N>-<template> when the Job belongs to restart attempt N > 0
// (jobset.sigs.k8s.io/restart-attempt), so that no new pod is ever bound to a claim of an
// earlier attempt.
func ResourceClaimName(job, template string, restartAttempt int) (string, error) {
	const object = "ResourceClaim"
	if err := checkIndex(object, "restart attempt", restartAttempt); err != nil {
		return "", err
	}
	if restartAttempt == 0 {
		return checkName(object, job+"-"+template)
	}
	return checkName(object, fmt.Sprintf("%s-r%d-%s", job, restartAttempt, template))
}

// PodGroupName is the name of the one PodGroup of a JobSet that is not sequenced: <jobset>.
func PodGroupName(jobSet string) (string, error) {
	return checkName("PodGroup", jobSet)
}

// WorkloadName is the name of the Workload (scheduling.k8s.io) of a JobSet gang-scheduled by
// SchedulerKubernetes: <jobset>. It holds one PodGroup template per gang (see
// PodGroupTemplateName).
func WorkloadName(jobSet string) (string, error) {
	return checkName("Workload", jobSet)
}

// PodGroupTemplateName is the name of stage i's PodGroup template in the JobSet's Workload:
// stage-<i> (stage-0 for a JobSet that is not sequenced).
func PodGroupTemplateName(stage int) (string, error) {
	const object = "PodGroup template"
	if err := checkIndex(object, "stage", stage); err != nil {
		return "", err
	}
	return fmt.Sprintf("stage-%d", stage), nil
}

// StagePodGroupName is the name of the PodGroup of stage i (see Stages) of a sequenced JobSet:
// <jobset>-stage-<i>.
func StagePodGroupName(jobSet string, stage int) (string, error) {
	const object = "stage PodGroup"
	if err := checkIndex(object, "stage", stage); err != nil {
		return "", err
	}
	return checkName(object, fmt.Sprintf("%s-stage-%d", jobSet, stage))
}

// KAIPodGroupName is the name of a gang's PodGroup for SchedulerKAI: the gang's name
// (PodGroupName, StagePodGroupName) and the namespace, joined with a dot. KAI Scheduler finds a
// PodGroup's pods by the name alone, in every namespace, so the name must be unique in the
// cluster; a namespace has no dot, so no two gangs give one name.
func KAIPodGroupName(gang, namespace string) (string, error) {
	return checkName("KAI PodGroup", gang+"."+namespace)
}

// JobPodGroupName is the name of the PodGroup of one Job of a composite gang
// (CompositeAnnotationKey): the Job's own name, <jobset>-<replicatedJob>-<index> as JobSet names
// it. The gang's CompositePodGroup takes the gang's name (PodGroupName, StagePodGroupName).
func JobPodGroupName(job string) (string, error) {
	return checkName("Job PodGroup", job)
}
