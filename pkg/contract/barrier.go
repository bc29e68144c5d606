package contract

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// StartBarrier is the value of the StartBarrierAnnotationKey annotation: which pods wait for
// each other.
type StartBarrier string

const (
	// StartBarrierJobSet: one barrier for every pod of the JobSet (of one restart attempt). On a
	// JobSet that runs in more than one stage (Stages) it is StartBarrierStage: the pods of a
	// later stage do not exist, or are not placed, until an earlier stage started, so the pods
	// that can ever wait together are those of one stage.
	StartBarrierJobSet StartBarrier = "JobSet"
	// StartBarrierStage: one barrier per stage (Stages): a stage's pods wait for each other, and
	// a later stage's pods, held back by the sequencer's gate (or not made yet by upstream JobSet's
	// dependsOn or startupPolicy InOrder), reach theirs after it started. Without sequencing it is
	// StartBarrierJobSet.
	StartBarrierStage StartBarrier = "Stage"
)

var startBarriers = []StartBarrier{StartBarrierJobSet, StartBarrierStage}

// ParseStartBarrier parses the value of the StartBarrierAnnotationKey annotation: JobSet or
// Stage. The empty value is refused (remove the annotation instead).
func ParseStartBarrier(value string, path *field.Path) (StartBarrier, field.ErrorList) {
	return parseEnum(value, path, startBarriers, nil)
}

const (
	// DefaultStartBarrierTimeout is the timeout of a barrier without StartBarrierTimeoutAnnotationKey.
	DefaultStartBarrierTimeout = 10 * time.Minute
	// MinStartBarrierTimeout and MaxStartBarrierTimeout bound StartBarrierTimeoutAnnotationKey.
	MinStartBarrierTimeout = time.Second
	MaxStartBarrierTimeout = 7 * 24 * time.Hour
	// StartBarrierGrace is how much longer than the timeout the barrier container waits on its
	// own, when nobody (no controller) tells it anything, before it fails.
	StartBarrierGrace = 2 * time.Minute
)

// ParseStartBarrierTimeout parses the value of the StartBarrierTimeoutAnnotationKey annotation:
// a Go duration ("90s", "15m") from MinStartBarrierTimeout to MaxStartBarrierTimeout.
func ParseStartBarrierTimeout(value string, path *field.Path) (time.Duration, field.ErrorList) {
	d, err := time.ParseDuration(value)
	switch {
	case err != nil:
		return 0, field.ErrorList{field.Invalid(path, value, `must be a duration such as "90s" or "15m"`)}
	case d < MinStartBarrierTimeout || d > MaxStartBarrierTimeout:
		return 0, field.ErrorList{field.Invalid(path, value, fmt.Sprintf("must be from %v to %v", MinStartBarrierTimeout, MaxStartBarrierTimeout))}
	}
	return d, nil
}

// The values of StartBarrierStateAnnotationKey.
const (
	// StartBarrierOpen: the barrier is open, the pod proceeds.
	StartBarrierOpen = "open"
	// StartBarrierFailedPrefix starts the value of a barrier that timed out; the reason follows.
	StartBarrierFailedPrefix = "failed: "
)

// StartBarrierGroup names a barrier within a restart attempt: "jobset" for StartBarrierJobSet,
// "stage-<index>" for StartBarrierStage.
func StartBarrierGroup(mode StartBarrier, stage int) string {
	if mode == StartBarrierStage {
		return fmt.Sprintf("stage-%d", stage)
	}
	return "jobset"
}

// BarriersOpened is the value of the StartBarrierOpenedAnnotationKey annotation.
type BarriersOpened struct {
	// RestartAttempt is the JobSet restart attempt the list is for.
	RestartAttempt int32 `json:"restartAttempt"`
	// Run is the run of the JobSet the list is for (StartBarrierRun): suspending a JobSet deletes
	// its pods and resuming it makes new ones in the same restart attempt, which must wait for
	// each other again. Nil in a record written before runs were recorded: such a record is
	// taken for the current run.
	Run *string `json:"run,omitempty"`
	// Groups are the opened barriers (StartBarrierGroup), without repeats, in the order opened.
	Groups []string `json:"groups"`
}

// Has tells whether the barrier is listed.
func (b BarriersOpened) Has(group string) bool { return slices.Contains(b.Groups, group) }

// With returns b with group appended if it is not listed. It does not modify b.
func (b BarriersOpened) With(group string) BarriersOpened {
	out := BarriersOpened{RestartAttempt: b.RestartAttempt, Run: b.Run, Groups: slices.Clone(b.Groups)}
	if !out.Has(group) {
		out.Groups = append(out.Groups, group)
	}
	return out
}

// StartBarrierRun names a run of a JobSet (BarriersOpened.Run) from its Suspended condition:
// "" when it has none (never suspended); the condition's lastTransitionTime (RFC 3339) when it
// is False (resumed then); StartBarrierResumingPrefix and that time when it is still True
// though the JobSet's spec no longer says suspended (the resume under way: upstream JobSet
// with startupPolicy InOrder keeps the condition True until every ReplicatedJob started).
func StartBarrierRun(hasCondition, suspended bool, lastTransition time.Time) string {
	switch {
	case !hasCondition:
		return ""
	case suspended:
		return StartBarrierResumingPrefix + lastTransition.UTC().Format(time.RFC3339)
	}
	return lastTransition.UTC().Format(time.RFC3339)
}

// StartBarrierResumingPrefix starts a run (StartBarrierRun) whose resume is under way.
const StartBarrierResumingPrefix = "resuming "

// For tells whether the list is for the restart attempt and run: the same run, or the run a
// resume under way when the list was written became (the first resume after the suspension it
// names). A list without a run, from before runs were recorded, is for any run of its attempt.
func (b BarriersOpened) For(attempt int32, run string) bool {
	if b.RestartAttempt != attempt {
		return false
	}
	if b.Run == nil || *b.Run == run {
		return true
	}
	suspendedAt, resuming := strings.CutPrefix(*b.Run, StartBarrierResumingPrefix)
	if !resuming || strings.HasPrefix(run, StartBarrierResumingPrefix) {
		return false
	}
	s, err1 := time.Parse(time.RFC3339, suspendedAt)
	r, err2 := time.Parse(time.RFC3339, run)
	return err1 == nil && err2 == nil && !r.Before(s)
}

// String is the annotation value, JSON such as {"restartAttempt":0,"run":"","groups":["jobset"]}.
func (b BarriersOpened) String() string {
	if b.Groups == nil {
		b.Groups = []string{}
	}
	out, _ := json.Marshal(b)
	return string(out)
}

// ParseBarriersOpened parses the value of the StartBarrierOpenedAnnotationKey annotation
// strictly. The attempt may not be negative; groups are required and may not repeat.
func ParseBarriersOpened(value string, path *field.Path) (BarriersOpened, field.ErrorList) {
	var b *BarriersOpened
	errs := parseAttemptList(value, path, &b, "groups", "the name of a barrier",
		func(b *BarriersOpened) (int32, []string) { return b.RestartAttempt, b.Groups })
	if len(errs) > 0 {
		return BarriersOpened{}, errs
	}
	return *b, nil
}
