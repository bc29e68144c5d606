package sequencer

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/pkg/addon/jobsets"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// Default is what the sequencer's mutating JobSet webhook does to a new JobSet: the start
// barrier's init container, volume and label in every pod template (InjectBarrier, with the
// container settings s), and the scheduling gate and gated label in the pod templates of every
// gated stage (Inject). A JobSet whose barrier or sequencing does not parse is left as it is
// for that part (ValidateCreate refuses it).
func Default(js *jobsetv1alpha2.JobSet, s BarrierSettings) {
	if b, ok, errs := ReadBarrier(js); ok && len(errs) == 0 {
		InjectBarrier(js, s, b.Timeout)
	}
	if !Sequences(js) {
		return
	}
	stages, errs := Stages(js)
	if len(errs) > 0 {
		return
	}
	Inject(js, stages)
}

// Parsed is what one admission reads of a JobSet's sequencer annotations, once, for its steps
// to share (Validate, Warnings): the stages with their problems, and the start barrier.
type Parsed struct {
	// Uses is false when the JobSet has no sequencer annotation: nothing else is read.
	Uses      bool
	Stages    []contract.Stage
	StageErrs field.ErrorList
	Barrier   Barrier
	// HasBarrier tells whether the JobSet asks for a start barrier.
	HasBarrier  bool
	BarrierErrs field.ErrorList
}

// ParseJobSet reads the sequencing and the start barrier of js, as js is now (after Default).
func ParseJobSet(js *jobsetv1alpha2.JobSet) *Parsed {
	p := &Parsed{Uses: Uses(js)}
	if p.Uses {
		p.Stages, p.StageErrs = Stages(js)
		p.Barrier, p.HasBarrier, p.BarrierErrs = ReadBarrier(js)
	}
	return p
}

// ValidateCreate is every problem of a new JobSet's sequencing (Parsed.Validate).
func ValidateCreate(js *jobsetv1alpha2.JobSet) field.ErrorList { return ParseJobSet(js).Validate(js) }

// Validate is every problem of a new JobSet's sequencing (as Default left it): what
// contract.Stages refuses (bad values, unknown names, self-dependencies, cycles,
// execution-policy with depends-on, depends-on beside upstream dependsOn, sequencer annotations
// with startupPolicy InOrder), a released or start-barrier-opened annotation, which only the
// controller writes, and what ValidateBarrier refuses of a start barrier.
func (p *Parsed) Validate(js *jobsetv1alpha2.JobSet) field.ErrorList {
	if !p.Uses {
		return nil
	}
	errs := slices.Clone(p.StageErrs)
	for _, key := range []string{contract.ReleasedAnnotationKey, contract.StartBarrierOpenedAnnotationKey} {
		if _, ok := js.Annotations[key]; ok {
			errs = append(errs, field.Forbidden(contract.JobSetAnnotationPath(key),
				"is written by the sequencer controller and may not be set on a new JobSet"))
		}
	}
	if p.HasBarrier {
		errs = append(errs, ValidateBarrier(js, p.Barrier, p.BarrierErrs)...)
	}
	return errs
}

// Warnings are the Warnings of a new JobSet that ValidateCreate accepts (Parsed.Warnings).
func Warnings(js *jobsetv1alpha2.JobSet) []string { return ParseJobSet(js).Warnings(js) }

// Warnings are the Warnings the sequencer's validating webhook gives a new JobSet that Validate
// accepts, that need no cluster: Kueue's waitForPodsReady beside stages that wait for a
// predecessor to complete (kueueWarnings), and a JobSet barrier on a staged JobSet
// (stagedBarrierWarnings).
func (p *Parsed) Warnings(js *jobsetv1alpha2.JobSet) []string {
	if !p.Uses {
		return nil
	}
	return slices.Concat(kueueWarnings(js, p.Stages), p.stagedBarrierWarnings())
}

// stagedBarrierWarnings warns, of a JobSet that asks for a start barrier of mode JobSet and runs
// in more than one stage, that it gets a barrier per stage: a barrier across stages could never
// open (the later stages' pods are not made, or not placed, until an earlier stage started).
func (p *Parsed) stagedBarrierWarnings() []string {
	stages := p.Stages
	if !p.HasBarrier || len(p.BarrierErrs) > 0 || !jobsets.StagedJobSetBarrier(p.Barrier.Mode, stages) {
		return nil
	}
	names := make([]string, len(stages))
	for i, s := range stages {
		names[i] = "[" + strings.Join(s.ReplicatedJobs, ", ") + "]"
	}
	return []string{fmt.Sprintf("%s: %s on a JobSet that runs in %d stages (%s) makes a barrier per stage, as %s does: "+
		"the pods of a stage wait for each other; a barrier across stages could never open, since a later stage's pods are made only after an earlier stage started",
		contract.JobSetAnnotationPath(contract.StartBarrierAnnotationKey), contract.StartBarrierJobSet, len(stages), strings.Join(names, " then "), contract.StartBarrierStage)}
}
