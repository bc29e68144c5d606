package podgroups

import (
	"fmt"
	"math"
	"slices"
	"strconv"

	"gopkg.in/inf.v0"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"
	resourcehelper "k8s.io/component-helpers/resource"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/pkg/addon/jobsets"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// Gang is one PodGroup's worth of a JobSet: the ReplicatedJobs of one stage.
type Gang struct {
	// Name is the PodGroup's name: <jobset>, or <jobset>-stage-<i> when the JobSet is sequenced;
	// for SchedulerKAI, with .<namespace> after it (contract.KAIPodGroupName).
	Name string
	// Stage is the stage the gang schedules.
	Stage contract.Stage
	// Sequenced tells whether the JobSet has more than one stage (the PodGroup then carries
	// the stage label).
	Sequenced bool
	// MinMember is Σ replicas × min(parallelism, completions) over the stage's ReplicatedJobs.
	MinMember int32
	// MinResources is the same sum of pod requests, as the scheduler counts them (init
	// containers and overhead included).
	MinResources corev1.ResourceList
	// PriorityClassNames are the distinct priorityClassName of the stage's pod templates, in
	// spec order ("" for a template without one).
	PriorityClassNames []string
	// Claims, for SchedulerKubernetes, are the per-Job claims that go on the gang's PodGroup
	// (jobsets.ClaimsOnPodGroup): the gang is one Job, of ReplicatedJob ClaimsOf, and these are
	// its resourceclaims template names. Empty otherwise.
	Claims []string
	// ClaimsOf is the ReplicatedJob whose one Job's claims Claims are.
	ClaimsOf string
	// Jobs, in a composite gang, are its Jobs, each a PodGroup of its own.
	Jobs []Job
	// Parent, on the gang of one Job of a composite gang (Children), is that composite gang:
	// the PodGroup's CompositePodGroup.
	Parent *Gang
	// Template, with Parent, is the Job's ReplicatedJob: the name of its PodGroup template in
	// the parent's CompositePodGroup template.
	Template string
}

// Children are the gangs of the Jobs of a composite gang, one PodGroup each; none for another.
func (g Gang) Children() []Gang {
	var out []Gang
	for _, j := range g.Jobs {
		parent := g
		out = append(out, Gang{
			Name: j.Name, Stage: g.Stage, Sequenced: g.Sequenced, MinMember: j.Pods, PriorityClassNames: g.PriorityClassNames,
			Claims: j.Claims, ClaimsOf: j.ReplicatedJob, Parent: &parent, Template: j.ReplicatedJob,
		})
	}
	return out
}

// Units are the gangs that are one PodGroup each: the Children of a composite gang, the gang
// itself otherwise.
func Units(gangs []Gang) []Gang {
	var out []Gang
	for _, g := range gangs {
		if len(g.Jobs) > 0 {
			out = append(out, g.Children()...)
			continue
		}
		out = append(out, g)
	}
	return out
}

// ClaimsJob is the Job whose claims Claims are: the Job itself for a composite gang's Job, the
// one Job of ClaimsOf otherwise.
func (g Gang) ClaimsJob(jobSet string) string {
	if g.Parent != nil {
		return g.Name
	}
	return jobsets.JobName(jobSet, g.ClaimsOf, 0)
}

// Job is one Job of a composite gang.
type Job struct {
	// Name is the Job's name, and its PodGroup's (contract.JobPodGroupName).
	Name string
	// ReplicatedJob is its ReplicatedJob: the name of its PodGroup template.
	ReplicatedJob string
	// Pods is its gang's minCount: its pods that run at once.
	Pods int32
	// Claims are its resourceclaims template names, listed on its PodGroup
	// (jobsets.ClaimsOnPodGroup).
	Claims []string
}

// Gangs are the JobSet's gangs under settings s, one per stage, or errors (with JobSet paths)
// when its stages cannot be computed, a gang's name is not valid or a gang has more pods than a
// PodGroup counts. What a scheduler's objects cannot hold besides is its backend's to refuse.
func Gangs(js *jobsetv1alpha2.JobSet, s Settings) ([]Gang, field.ErrorList) {
	stages, errs := jobsets.Stages(js)
	if len(errs) > 0 || len(stages) == 0 {
		return nil, errs
	}
	claims := jobClaims(js, s, stages)
	var gangs []Gang
	for _, st := range stages {
		name, err := Name(js.Name, st.Index, len(stages) > 1)
		if err == nil && s.Scheduler == contract.SchedulerKAI {
			name, err = contract.KAIPodGroupName(name, js.Namespace)
		}
		if err != nil {
			return nil, field.ErrorList{field.Invalid(field.NewPath("metadata", "name"), js.Name, err.Error())}
		}
		g, ferr := stageGang(js, st, name, len(stages) > 1)
		if ferr != nil {
			errs = append(errs, ferr)
			continue
		}
		switch {
		case s.Composite:
			for _, rjName := range st.ReplicatedJobs {
				rj := jobsets.ReplicatedJob(js, rjName)
				for i := range rj.Replicas {
					g.Jobs = append(g.Jobs, Job{Name: jobsets.JobName(js.Name, rjName, i), ReplicatedJob: rjName, Pods: PodsPerJob(rj), Claims: claims[rjName]})
				}
			}
		case len(st.ReplicatedJobs) == 1 && claims[st.ReplicatedJobs[0]] != nil:
			g.ClaimsOf, g.Claims = st.ReplicatedJobs[0], claims[st.ReplicatedJobs[0]]
		}
		gangs = append(gangs, g)
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return gangs, nil
}

// stageGang is gang name of stage st: its pods, resources and priority classes, or an error
// when it has more pods than a PodGroup counts.
func stageGang(js *jobsetv1alpha2.JobSet, st contract.Stage, name string, sequenced bool) (Gang, *field.Error) {
	g := Gang{Name: name, Stage: st, Sequenced: sequenced, MinResources: corev1.ResourceList{}}
	members := int64(0)
	for _, rjName := range st.ReplicatedJobs {
		rj := jobsets.ReplicatedJob(js, rjName)
		pods := int64(PodsPerJob(rj)) * int64(rj.Replicas)
		members += pods
		requests := resourcehelper.PodRequests(&corev1.Pod{Spec: rj.Template.Spec.Template.Spec}, resourcehelper.PodResourcesOptions{})
		for res, q := range requests {
			sum := g.MinResources[res]
			sum.Add(times(q, pods))
			g.MinResources[res] = sum
		}
		if pc := rj.Template.Spec.Template.Spec.PriorityClassName; !slices.Contains(g.PriorityClassNames, pc) {
			g.PriorityClassNames = append(g.PriorityClassNames, pc)
		}
	}
	if members > math.MaxInt32 {
		return g, field.Invalid(field.NewPath("spec", "replicatedJobs"), members,
			fmt.Sprintf("stage %d has %d pods, more than a PodGroup's minMember can hold (%d)", st.Index, members, math.MaxInt32))
	}
	g.MinMember = int32(members)
	return g, nil
}

// times is q × n, exactly (inf.Dec), whatever the size of either.
func times(q resource.Quantity, n int64) resource.Quantity {
	d := new(inf.Dec).Mul(q.AsDec(), inf.NewDec(n, 0))
	return *resource.NewDecimalQuantity(*d, q.Format)
}

// Name is the PodGroup name of stage i.
func Name(jobSet string, stage int, sequenced bool) (string, error) {
	if !sequenced {
		return contract.PodGroupName(jobSet)
	}
	return contract.StagePodGroupName(jobSet, stage)
}

// StageLabel is the value of contract.PodGroupStageLabelKey for stage i.
func StageLabel(stage int) string { return strconv.Itoa(stage) }

// PodsPerJob is how many pods of one Job of the ReplicatedJob run at once (jobsets.PodsPerJob).
func PodsPerJob(rj *jobsetv1alpha2.ReplicatedJob) int32 { return jobsets.PodsPerJob(rj) }

// MayRun tells whether stage st of js may run in restart attempt attempt, so that its gang is
// made: stage 0; a stage the sequencer gates once it released it in that attempt
// (contract.ReleasedAnnotationKey); any other stage once a Job of it exists in that attempt
// (created: upstream dependsOn holds its Jobs back until then).
func MayRun(js *jobsetv1alpha2.JobSet, st contract.Stage, attempt int32, created bool) bool {
	if !st.Gated && st.Index > 0 {
		return created
	}
	released := contract.Released{RestartAttempt: attempt}
	if v, ok := js.Annotations[contract.ReleasedAnnotationKey]; ok {
		if got, errs := contract.ParseReleased(v, nil); len(errs) == 0 && got.RestartAttempt == attempt {
			released = got
		}
	}
	return released.StageReleased(st)
}
