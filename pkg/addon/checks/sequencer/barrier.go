package sequencer

import (
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/pkg/addon/jobsets"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// BarrierMountPath is where the barrier container finds its state file, BarrierStateFile.
const (
	BarrierMountPath = "/var/run/jobset-addons/barrier"
	BarrierStateFile = "state"
)

// UsesBarrier tells whether the JobSet asks for a start barrier.
func UsesBarrier(js *jobsetv1alpha2.JobSet) bool {
	_, ok := js.Annotations[contract.StartBarrierAnnotationKey]
	return ok
}

// Barrier is a JobSet's start barrier, read from its annotations.
type Barrier struct {
	Mode    contract.StartBarrier
	Timeout time.Duration
}

// ReadBarrier reads the barrier annotations; ok is false when there is no barrier, errs names
// the bad annotations.
func ReadBarrier(js *jobsetv1alpha2.JobSet) (b Barrier, ok bool, errs field.ErrorList) {
	value, ok := js.Annotations[contract.StartBarrierAnnotationKey]
	if !ok {
		return Barrier{}, false, nil
	}
	b.Mode, errs = contract.ParseStartBarrier(value, contract.JobSetAnnotationPath(contract.StartBarrierAnnotationKey))
	b.Timeout = contract.DefaultStartBarrierTimeout
	if t, found := js.Annotations[contract.StartBarrierTimeoutAnnotationKey]; found {
		d, terrs := contract.ParseStartBarrierTimeout(t, contract.JobSetAnnotationPath(contract.StartBarrierTimeoutAnnotationKey))
		errs = append(errs, terrs...)
		b.Timeout = d
	}
	return b, true, errs
}

// BarrierGroups are the barriers of the JobSet (jobsets.BarrierGroups).
func BarrierGroups(js *jobsetv1alpha2.JobSet, stages []contract.Stage) []jobsets.BarrierGroup {
	return jobsets.BarrierGroups(js, stages)
}

// HasBarrier tells whether a pod spec has the barrier init container.
func HasBarrier(spec *corev1.PodSpec) bool { return containerIndex(spec.InitContainers) >= 0 }

// ValidateBarrier is every problem of the JobSet's barrier b as admitted (after InjectBarrier),
// readErrs being what ReadBarrier found wrong in its annotations: those, a ReplicatedJob whose pods could never all exist at once (parallelism below
// completions), a container or volume of the user's with the barrier's name, the barrier not
// last of the init containers, and the pod annotation the controller writes set in a template.
func ValidateBarrier(js *jobsetv1alpha2.JobSet, b Barrier, readErrs field.ErrorList) field.ErrorList {
	errs := slices.Clone(readErrs)
	want := comparable(BarrierContainer(BarrierSettings{}, b.Timeout))
	rjPath := field.NewPath("spec", "replicatedJobs")
	for i := range js.Spec.ReplicatedJobs {
		rj := &js.Spec.ReplicatedJobs[i]
		jobSpec := rj.Template.Spec
		spec := &jobSpec.Template.Spec
		p := rjPath.Index(i).Child("template", "spec")
		if jobSpec.Completions != nil && ptr.Deref(jobSpec.Parallelism, 1) < *jobSpec.Completions {
			errs = append(errs, field.Invalid(p.Child("parallelism"), ptr.Deref(jobSpec.Parallelism, 1),
				fmt.Sprintf("may not be less than completions (%d) with %s: the pods of a Job that could never all run at once would never all reach the barrier", *jobSpec.Completions, contract.StartBarrierAnnotationKey)))
		}
		podPath := p.Child("template", "spec")
		if _, set := jobSpec.Template.Annotations[contract.StartBarrierStateAnnotationKey]; set {
			errs = append(errs, field.Forbidden(p.Child("template", "metadata", "annotations").Key(contract.StartBarrierStateAnnotationKey),
				"is written by the sequencer controller on each pod"))
		}
		if k := containerIndex(spec.Containers); k >= 0 {
			errs = append(errs, clash(podPath.Child("containers").Index(k).Child("name"), "container"))
		}
		k := containerIndex(spec.InitContainers)
		if k >= 0 {
			if !equality.Semantic.DeepEqual(comparable(spec.InitContainers[k]), want) {
				errs = append(errs, clash(podPath.Child("initContainers").Index(k).Child("name"), "init container"))
			} else if k != len(spec.InitContainers)-1 {
				errs = append(errs, field.Invalid(podPath.Child("initContainers").Index(k).Child("name"), contract.StartBarrierContainerName,
					"the start barrier must be the last init container: it was added after the user's, and may not move"))
			}
		}
		if v := volumeIndex(spec.Volumes); v >= 0 && !equality.Semantic.DeepEqual(spec.Volumes[v], BarrierVolume()) {
			errs = append(errs, clash(podPath.Child("volumes").Index(v).Child("name"), "volume"))
		}
	}
	return errs
}

// clash is the error of a user's container or volume named like the barrier's.
func clash(path *field.Path, what string) *field.Error {
	return field.Invalid(path, contract.StartBarrierContainerName,
		"is the name of the "+what+" the start barrier ("+contract.StartBarrierAnnotationKey+") adds: rename yours")
}

func containerIndex(cs []corev1.Container) int {
	return slices.IndexFunc(cs, func(c corev1.Container) bool { return c.Name == contract.StartBarrierContainerName })
}

func volumeIndex(vs []corev1.Volume) int {
	return slices.IndexFunc(vs, func(v corev1.Volume) bool { return v.Name == contract.StartBarrierContainerName })
}
