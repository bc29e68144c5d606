package contract

import (
	"encoding/json"
	"slices"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ExecutionPolicy is the value of the ExecutionPolicyAnnotationKey annotation.
type ExecutionPolicy string

// ExecutionPolicyInOrder runs the ReplicatedJobs one after the other, in spec order: each waits
// for the one before it to reach the WaitForAnnotationKey status.
const ExecutionPolicyInOrder ExecutionPolicy = "InOrder"

var executionPolicies = []ExecutionPolicy{ExecutionPolicyInOrder}

// ParseExecutionPolicy parses the value of the ExecutionPolicyAnnotationKey annotation. The only
// value is InOrder; the empty value is refused (remove the annotation instead).
func ParseExecutionPolicy(value string, path *field.Path) (ExecutionPolicy, field.ErrorList) {
	return parseEnum(value, path, executionPolicies, nil)
}

// DependencyStatus is the status a predecessor ReplicatedJob must reach before its successors
// are released. The values are upstream JobSet's (spec.replicatedJobs[].dependsOn[].status).
type DependencyStatus string

const (
	// DependencyComplete: every Job of the predecessor (of the current restart attempt) succeeded.
	DependencyComplete DependencyStatus = "Complete"
	// DependencyReady: the predecessor's ready and succeeded Jobs equal its replicas.
	DependencyReady DependencyStatus = "Ready"

	// DefaultWaitFor is the status waited for when WaitForAnnotationKey is absent.
	DefaultWaitFor = DependencyComplete
)

var dependencyStatuses = []DependencyStatus{DependencyComplete, DependencyReady}

// dependencyStatusAliases are accepted spellings, turned into the canonical value:
// KEP-672 called Complete "Succeeded".
var dependencyStatusAliases = map[string]DependencyStatus{"Succeeded": DependencyComplete}

// ParseWaitFor parses the value of the WaitForAnnotationKey annotation: Complete or Ready,
// with Succeeded accepted for Complete. When the annotation is absent, use DefaultWaitFor.
func ParseWaitFor(value string, path *field.Path) (DependencyStatus, field.ErrorList) {
	return parseEnum(value, path, dependencyStatuses, dependencyStatusAliases)
}

// Dependency is one predecessor of a ReplicatedJob: an entry of the DependsOnAnnotationKey
// annotation, of upstream spec.replicatedJobs[].dependsOn, or of a Stage's DependsOn.
type Dependency struct {
	// Name is the predecessor ReplicatedJob. Required.
	Name string `json:"name"`
	// Status is what the predecessor must reach: Complete or Ready (Succeeded is read as
	// Complete). When omitted, the JobSet's WaitForAnnotationKey status (Complete by default).
	Status DependencyStatus `json:"status"`
}

// ParseDependsOn parses the value of the DependsOnAnnotationKey annotation, a YAML or JSON list
// of Dependency, strictly (see README.md). Names are required and unique; a status left out is
// Complete (Stages uses the JobSet's wait-for annotation instead). An empty value or an empty
// list is refused. Whether the names exist, and cycles, are for Stages to find.
func ParseDependsOn(value string, path *field.Path) ([]Dependency, field.ErrorList) {
	return parseDependsOn(value, path, DefaultWaitFor)
}

func parseDependsOn(value string, path *field.Path, defaultStatus DependencyStatus) ([]Dependency, field.ErrorList) {
	var deps []Dependency
	decodeErrs := decodeStrict(value, path, &deps)
	var errs field.ErrorList
	if len(decodeErrs) == 0 && len(deps) == 0 {
		errs = append(errs, field.Required(path, "must be a non-empty list of {name, status}"))
	}
	errs = append(errs, validateDependencies(deps, path, defaultStatus)...)
	return deps, joinErrors(decodeErrs, errs)
}

// validateDependencies checks names (required, unique) and statuses, filling in defaultStatus.
func validateDependencies(deps []Dependency, path *field.Path, defaultStatus DependencyStatus) field.ErrorList {
	var errs field.ErrorList
	seen := map[string]bool{}
	for i := range deps {
		d := &deps[i]
		np := path.Index(i).Child("name")
		if d.Name == "" {
			errs = append(errs, field.Required(np, "the name of a ReplicatedJob"))
		} else if seen[d.Name] {
			errs = append(errs, field.Duplicate(np, d.Name))
		}
		seen[d.Name] = true
		if d.Status == "" {
			d.Status = defaultStatus
			continue
		}
		s, serrs := parseEnum(string(d.Status), path.Index(i).Child("status"), dependencyStatuses, dependencyStatusAliases)
		if len(serrs) == 0 {
			d.Status = s
		}
		errs = append(errs, serrs...)
	}
	return errs
}

// Released is the value of the ReleasedAnnotationKey annotation, written by the sequencer
// controller: the ReplicatedJobs whose pods it has released (removed its scheduling gate from)
// in one restart attempt of the JobSet. A ReplicatedJob of stage 0, or of a stage that is not
// Gated, is never listed. After a restart the sequencer starts the list again, for the new
// attempt. It is written as JSON, such as {"restartAttempt":1,"replicatedJobs":["node"]}.
type Released struct {
	// RestartAttempt is the JobSet restart attempt (jobset.sigs.k8s.io/restart-attempt of its
	// Jobs, the JobSet's status.restarts) the list is for.
	RestartAttempt int32 `json:"restartAttempt"`
	// ReplicatedJobs are the released ReplicatedJobs, without repeats, in the order released.
	ReplicatedJobs []string `json:"replicatedJobs"`
}

// Has tells whether the ReplicatedJob is listed.
func (r Released) Has(replicatedJob string) bool {
	return slices.Contains(r.ReplicatedJobs, replicatedJob)
}

// StageReleased tells whether every ReplicatedJob of the stage may run: stage 0 and a stage
// that is not Gated always may; a Gated stage once all its ReplicatedJobs are listed.
func (r Released) StageReleased(s Stage) bool {
	if s.Index == 0 || !s.Gated {
		return true
	}
	for _, name := range s.ReplicatedJobs {
		if !r.Has(name) {
			return false
		}
	}
	return true
}

// With returns r with the ReplicatedJobs appended that it does not list yet. It does not
// modify r.
func (r Released) With(replicatedJobs ...string) Released {
	out := Released{RestartAttempt: r.RestartAttempt, ReplicatedJobs: slices.Clone(r.ReplicatedJobs)}
	for _, name := range replicatedJobs {
		if !out.Has(name) {
			out.ReplicatedJobs = append(out.ReplicatedJobs, name)
		}
	}
	return out
}

// String is the annotation value: JSON such as {"restartAttempt":0,"replicatedJobs":["node"]}
// (an empty list is written as []).
func (r Released) String() string {
	if r.ReplicatedJobs == nil {
		r.ReplicatedJobs = []string{}
	}
	b, _ := json.Marshal(r)
	return string(b)
}

// ParseReleased parses the value of the ReleasedAnnotationKey annotation strictly: a JSON (or
// YAML) object {restartAttempt, replicatedJobs}. The attempt may not be negative; names are
// required and may not repeat. An absent annotation means nothing is released yet; the empty
// value is refused.
func ParseReleased(value string, path *field.Path) (Released, field.ErrorList) {
	var r *Released
	errs := parseAttemptList(value, path, &r, "replicatedJobs", "the name of a ReplicatedJob",
		func(r *Released) (int32, []string) { return r.RestartAttempt, r.ReplicatedJobs })
	if len(errs) > 0 {
		return Released{}, errs
	}
	return *r, nil
}

// parseAttemptList decodes value strictly into *out, an object of a restart attempt and a list
// of names under listField (read by fields), and checks them: the object present, the attempt
// not negative, the names (what they are: what) given and not repeated.
func parseAttemptList[T any](value string, path *field.Path, out **T, listField, what string, fields func(*T) (int32, []string)) field.ErrorList {
	decodeErrs := decodeStrict(value, path, out)
	var errs field.ErrorList
	if len(decodeErrs) == 0 && *out == nil {
		errs = append(errs, field.Required(path, "must be an object {restartAttempt, "+listField+"}"))
	}
	if *out == nil {
		*out = new(T)
	}
	attempt, names := fields(*out)
	if attempt < 0 {
		errs = append(errs, field.Invalid(path.Child("restartAttempt"), attempt, "must not be negative"))
	}
	seen := map[string]bool{}
	for i, name := range names {
		p := path.Child(listField).Index(i)
		if name == "" {
			errs = append(errs, field.Required(p, what))
		} else if seen[name] {
			errs = append(errs, field.Duplicate(p, name))
		}
		seen[name] = true
	}
	return joinErrors(decodeErrs, errs)
}
