package contract

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// JobSetView is what Stages needs of a JobSet. This module may not import the JobSet API, so the
// caller copies these few fields out of its jobset.JobSet.
type JobSetView struct {
	// Annotations are the JobSet's metadata.annotations.
	Annotations map[string]string
	// StartupPolicyInOrder is true when spec.startupPolicy.startupPolicyOrder is InOrder.
	StartupPolicyInOrder bool
	// ReplicatedJobs are spec.replicatedJobs, in spec order.
	ReplicatedJobs []ReplicatedJobView
}

// ReplicatedJobView is what Stages needs of one ReplicatedJob.
type ReplicatedJobView struct {
	// Name is spec.replicatedJobs[i].name.
	Name string
	// TemplateAnnotations are spec.replicatedJobs[i].template.metadata.annotations.
	TemplateAnnotations map[string]string
	// DependsOn is upstream spec.replicatedJobs[i].dependsOn.
	DependsOn []Dependency
}

// Stage is a set of ReplicatedJobs released together.
type Stage struct {
	// Index is the stage's position, from 0. Stage 0 waits for nothing.
	Index int
	// ReplicatedJobs are the names of the stage's ReplicatedJobs, in spec order.
	ReplicatedJobs []string
	// DependsOn is what the stage waits for: every predecessor of any of its ReplicatedJobs, in
	// spec order, each once. A predecessor awaited as Ready by one and Complete by another is
	// awaited as Complete.
	DependsOn []Dependency
	// Gated tells whether the sequencer holds the stage's pods back with its scheduling gate
	// (the stage waits because of sequencer annotations) and records its release in
	// ReleasedAnnotationKey. When false and Index > 0, the stage waits only because of upstream
	// JobSet's dependsOn or startupPolicy, and upstream holds it back by not creating its Jobs.
	Gated bool
}

// Stages orders the ReplicatedJobs of a JobSet into stages from the sequencer annotations
// (ExecutionPolicyAnnotationKey, WaitForAnnotationKey, DependsOnAnnotationKey) and upstream
// JobSet's dependsOn and startupPolicy InOrder:
//
//   - nothing of that: one stage holding every ReplicatedJob (use Sequenced to ask);
//   - execution-policy InOrder, or upstream startupPolicy InOrder: stage i is replicatedJobs[i],
//     waiting for replicatedJobs[i-1] to reach the wait-for status (Ready for startupPolicy);
//   - depends-on annotations and/or upstream dependsOn: each ReplicatedJob goes in the first
//     stage after all of its predecessors' stages; a depends-on entry without a status uses
//     the wait-for status.
//
// The result is deterministic. It is nil when the JobSet has no ReplicatedJobs, or when the
// returned errors are not empty. Errors have the paths of a JobSet: unparsable annotations,
// unknown or repeated predecessor names, a ReplicatedJob that depends on itself, cycles,
// execution-policy InOrder together with depends-on or dependsOn (ambiguous), depends-on and
// dependsOn on the same ReplicatedJob, and the sequencer
// annotations together with upstream startupPolicy InOrder.
func Stages(v JobSetView) ([]Stage, field.ErrorList) {
	g, errs := buildGraph(v)
	if len(errs) > 0 {
		return nil, errs
	}
	levels, errs := g.levels()
	if len(errs) > 0 {
		return nil, errs
	}
	var stages []Stage
	for i, rj := range v.ReplicatedJobs {
		l := levels[i]
		for len(stages) <= l {
			stages = append(stages, Stage{Index: len(stages)})
		}
		st := &stages[l]
		st.ReplicatedJobs = append(st.ReplicatedJobs, rj.Name)
		for _, e := range g.edges[i] {
			st.Gated = st.Gated || e.gated
			st.DependsOn = mergeDependency(st.DependsOn, Dependency{Name: v.ReplicatedJobs[e.from].Name, Status: e.status})
		}
	}
	for s := range stages {
		sortDependencies(stages[s].DependsOn, g.index)
	}
	return stages, nil
}

// Sequenced tells whether the JobSet's ReplicatedJobs run in more than one stage. A JobSet whose
// stages cannot be computed (Stages returns errors) is not sequenced.
func Sequenced(v JobSetView) bool {
	stages, errs := Stages(v)
	return len(errs) == 0 && len(stages) > 1
}

// StageOf returns the index of the stage holding the ReplicatedJob, and whether one does.
func StageOf(stages []Stage, replicatedJob string) (int, bool) {
	for _, s := range stages {
		for _, name := range s.ReplicatedJobs {
			if name == replicatedJob {
				return s.Index, true
			}
		}
	}
	return 0, false
}

// edge says that ReplicatedJob "to" waits for ReplicatedJob "from" to reach status.
type edge struct {
	from   int
	status DependencyStatus
	gated  bool        // from a sequencer annotation
	path   *field.Path // the predecessor's name, for errors
}

type graph struct {
	names []string
	index map[string]int
	edges [][]edge // by successor
}

// buildGraph reads and checks every sequencing input of the JobSet.
func buildGraph(v JobSetView) (*graph, field.ErrorList) {
	var errs field.ErrorList
	rjPath := field.NewPath("spec", "replicatedJobs")
	g := &graph{index: map[string]int{}, edges: make([][]edge, len(v.ReplicatedJobs))}
	for i, rj := range v.ReplicatedJobs {
		g.names = append(g.names, rj.Name)
		switch _, dup := g.index[rj.Name]; {
		case rj.Name == "":
			errs = append(errs, field.Required(rjPath.Index(i).Child("name"), ""))
		case dup:
			errs = append(errs, field.Duplicate(rjPath.Index(i).Child("name"), rj.Name))
		default:
			g.index[rj.Name] = i
		}
	}

	policyValue, hasPolicy := v.Annotations[ExecutionPolicyAnnotationKey]
	policyPath := JobSetAnnotationPath(ExecutionPolicyAnnotationKey)
	inOrder := false
	if hasPolicy {
		_, perrs := ParseExecutionPolicy(policyValue, policyPath)
		errs = append(errs, perrs...)
		inOrder = len(perrs) == 0
	}
	waitFor := DefaultWaitFor
	waitForValue, hasWaitFor := v.Annotations[WaitForAnnotationKey]
	if hasWaitFor {
		w, werrs := ParseWaitFor(waitForValue, JobSetAnnotationPath(WaitForAnnotationKey))
		errs = append(errs, werrs...)
		if len(werrs) == 0 {
			waitFor = w
		}
	}
	hasDependsOn := false
	for _, rj := range v.ReplicatedJobs {
		if _, ok := rj.TemplateAnnotations[DependsOnAnnotationKey]; ok {
			hasDependsOn = true
		}
	}
	if v.StartupPolicyInOrder && (hasPolicy || hasWaitFor || hasDependsOn) {
		errs = append(errs, field.Forbidden(field.NewPath("spec", "startupPolicy"),
			"may not be InOrder in a JobSet that uses the "+SequencerManagedByValue+" annotations: use "+
				ExecutionPolicyAnnotationKey+": InOrder instead"))
	}

	if inOrder {
		// InOrder: each ReplicatedJob waits for the one before it; nothing else may say otherwise.
		for i, rj := range v.ReplicatedJobs {
			if _, ok := rj.TemplateAnnotations[DependsOnAnnotationKey]; ok {
				errs = append(errs, field.Forbidden(ReplicatedJobAnnotationPath(i, DependsOnAnnotationKey),
					"may not be set when "+policyPath.String()+" is InOrder"))
			}
			if len(rj.DependsOn) > 0 {
				errs = append(errs, field.Forbidden(rjPath.Index(i).Child("dependsOn"),
					"may not be set when "+policyPath.String()+" is InOrder"))
			}
			if i > 0 {
				g.edges[i] = append(g.edges[i], edge{from: i - 1, status: waitFor, gated: true, path: policyPath})
			}
		}
		return g, errs
	}
	if v.StartupPolicyInOrder {
		for i := 1; i < len(v.ReplicatedJobs); i++ {
			g.edges[i] = append(g.edges[i], edge{from: i - 1, status: DependencyReady, path: field.NewPath("spec", "startupPolicy")})
		}
	}
	for i, rj := range v.ReplicatedJobs {
		if value, ok := rj.TemplateAnnotations[DependsOnAnnotationKey]; ok {
			p := ReplicatedJobAnnotationPath(i, DependsOnAnnotationKey)
			deps, derrs := parseDependsOn(value, p, waitFor)
			errs = append(errs, derrs...)
			errs = append(errs, g.addEdges(i, deps, p, true)...)
		}
		if _, ok := rj.TemplateAnnotations[DependsOnAnnotationKey]; ok && len(rj.DependsOn) > 0 {
			errs = append(errs, field.Forbidden(ReplicatedJobAnnotationPath(i, DependsOnAnnotationKey),
				"may not be set on a ReplicatedJob that also has "+rjPath.Index(i).Child("dependsOn").String()+": use one or the other"))
		}
		if len(rj.DependsOn) > 0 {
			p := rjPath.Index(i).Child("dependsOn")
			deps := append([]Dependency(nil), rj.DependsOn...)
			errs = append(errs, validateDependencies(deps, p, DefaultWaitFor)...)
			errs = append(errs, g.addEdges(i, deps, p, false)...)
		}
	}
	return g, errs
}

// addEdges adds the dependencies of ReplicatedJob i, listed at path.
func (g *graph) addEdges(i int, deps []Dependency, path *field.Path, gated bool) field.ErrorList {
	var errs field.ErrorList
	for j, d := range deps {
		if d.Name == "" {
			continue // reported by validateDependencies
		}
		np := path.Index(j).Child("name")
		from, ok := g.index[d.Name]
		switch {
		case d.Name == g.names[i]:
			errs = append(errs, field.Invalid(np, d.Name, "a ReplicatedJob cannot depend on itself"))
		case !ok:
			errs = append(errs, field.NotFound(np, d.Name))
		default:
			g.edges[i] = append(g.edges[i], edge{from: from, status: d.Status, gated: gated, path: np})
		}
	}
	return errs
}

// levels gives each ReplicatedJob its stage: 0 without predecessors, else one more than its
// latest predecessor's. It reports every cycle it meets, once.
func (g *graph) levels() ([]int, field.ErrorList) {
	const (
		unvisited = iota
		visiting
		done
	)
	state := make([]int, len(g.names))
	level := make([]int, len(g.names))
	var stack []int    // ReplicatedJobs being visited
	var viaEdge []edge // the edge taken out of each of them
	var errs field.ErrorList
	reported := map[string]bool{}
	var visit func(i int)
	visit = func(i int) {
		state[i] = visiting
		stack = append(stack, i)
		for _, e := range g.edges[i] {
			viaEdge = append(viaEdge, e)
			switch state[e.from] {
			case unvisited:
				visit(e.from)
			case visiting:
				errs = append(errs, g.cycleError(stack, viaEdge, e.from, reported)...)
			}
			viaEdge = viaEdge[:len(viaEdge)-1]
			level[i] = max(level[i], level[e.from]+1)
		}
		stack = stack[:len(stack)-1]
		state[i] = done
	}
	for i := range g.names {
		if state[i] == unvisited {
			visit(i)
		}
	}
	return level, errs
}

// cycleError reports the cycle closed by reaching start again, at the dependency of its
// earliest ReplicatedJob (in spec order) on the next one in the cycle.
func (g *graph) cycleError(stack []int, viaEdge []edge, start int, reported map[string]bool) field.ErrorList {
	at := 0
	for stack[at] != start {
		at++
	}
	members, edges := stack[at:], viaEdge[at:]
	first := 0
	for k := range members {
		if members[k] < members[first] {
			first = k
		}
	}
	names := make([]string, 0, len(members)+1)
	for k := range members {
		names = append(names, g.names[members[(first+k)%len(members)]])
	}
	key := strings.Join(names, "\x00")
	if reported[key] {
		return nil
	}
	reported[key] = true
	names = append(names, names[0])
	e := edges[first]
	return field.ErrorList{field.Invalid(e.path, g.names[e.from],
		fmt.Sprintf("dependency cycle: %s (each depends on the next)", strings.Join(names, " -> ")))}
}

// mergeDependency adds d to deps, or, if deps already names its ReplicatedJob, keeps the later
// status of the two (Complete).
func mergeDependency(deps []Dependency, d Dependency) []Dependency {
	for k := range deps {
		if deps[k].Name == d.Name {
			if d.Status == DependencyComplete {
				deps[k].Status = DependencyComplete
			}
			return deps
		}
	}
	return append(deps, d)
}

// sortDependencies puts deps in the spec order of their ReplicatedJobs.
func sortDependencies(deps []Dependency, index map[string]int) {
	slices.SortFunc(deps, func(a, b Dependency) int { return cmp.Compare(index[a.Name], index[b.Name]) })
}
