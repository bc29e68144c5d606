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

// ReleasedStages is the value of the ReleasedAnnotationKey annotation: the indexes of the stages
// (see Stages) that the sequencer has released, ascending and without repeats. Stage 0 waits for
// nothing and is never listed. It is written as a JSON list, such as [1,2].
type ReleasedStages []int

// Has tells whether stage i is released. Stage 0 always is.
func (r ReleasedStages) Has(i int) bool {
	if i == 0 {
		return true
	}
	_, found := slices.BinarySearch(r, i)
	return found
}

// With returns the stages with stage i added, keeping them sorted. It does not modify r.
func (r ReleasedStages) With(i int) ReleasedStages {
	if i == 0 || r.Has(i) {
		return r
	}
	out := append(slices.Clone(r), i)
	slices.Sort(out)
	return out
}

// String is the annotation value: a JSON list such as [1,2] ([] when empty).
func (r ReleasedStages) String() string {
	if r == nil {
		r = ReleasedStages{}
	}
	b, _ := json.Marshal([]int(r))
	return string(b)
}

// ParseReleasedStages parses the value of the ReleasedAnnotationKey annotation: a JSON (or YAML)
// list of stage indexes, each at least 1, without repeats. They are returned sorted. An absent
// annotation means nothing is released yet; the empty value is refused.
func ParseReleasedStages(value string, path *field.Path) (ReleasedStages, field.ErrorList) {
	var list []int
	decodeErrs := decodeStrict(value, path, &list)
	var errs field.ErrorList
	if len(decodeErrs) == 0 && list == nil {
		errs = append(errs, field.Required(path, "must be a list of stage indexes"))
	}
	seen := map[int]bool{}
	for i, s := range list {
		if s < 1 {
			errs = append(errs, field.Invalid(path.Index(i), s, "must be a stage index greater than 0 (stage 0 is never held back)"))
		} else if seen[s] {
			errs = append(errs, field.Duplicate(path.Index(i), s))
		}
		seen[s] = true
	}
	if errs = joinErrors(decodeErrs, errs); len(errs) > 0 {
		return nil, errs
	}
	slices.Sort(list)
	return ReleasedStages(list), nil
}
