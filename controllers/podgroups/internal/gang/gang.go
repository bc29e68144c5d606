// Package gang reads a JobSet that asks for gang scheduling (contract.SchedulerAnnotationKey) and
// says what its gangs are: one per stage of contract.Stages, each with the pods it must place
// together and the resources they request. The webhooks inject and validate from it, and the
// controller builds PodGroups from it, so that the three agree.
package gang

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/inf.v0"
	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	resourcehelper "k8s.io/component-helpers/resource"
	"k8s.io/utils/ptr"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/pkg/addon/jobsets"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// SchedulerNames are the schedulerName each second-scheduler backend's pods get: chart values,
// flags of the binary.
type SchedulerNames struct {
	Volcano, Coscheduling string
}

// For is the schedulerName of the backend, or "" for SchedulerKubernetes, whose pods keep the
// schedulerName they have (kube-scheduler, under whichever profile name it serves).
func (n SchedulerNames) For(s contract.Scheduler) string {
	switch s {
	case contract.SchedulerCoscheduling:
		return n.Coscheduling
	case contract.SchedulerKubernetes:
		return ""
	}
	return n.Volcano
}

// MaxKubernetesGangs is how many gangs (stages) a JobSet gang-scheduled by SchedulerKubernetes
// may have: each is a PodGroup template of its one Workload, which holds at most
// schedulingv1beta1.WorkloadMaxPodGroupTemplates.
const MaxKubernetesGangs = schedulingv1beta1.WorkloadMaxPodGroupTemplates

// Settings are a JobSet's podgroups annotations, parsed.
type Settings struct {
	Scheduler contract.Scheduler
	// Queue is the Volcano queue; empty leaves Volcano's default.
	Queue string
	// NetworkTopology is Volcano's network topology; nil when not asked for.
	NetworkTopology *contract.NetworkTopology
	// ScheduleTimeoutSeconds is coscheduling's Permit timeout; nil leaves the scheduler's.
	ScheduleTimeoutSeconds *int32
	// TopologyKey is the node label key each gang's pods must share one value of (kubernetes
	// only); empty when not asked for. With Composite, each Job's pods.
	TopologyKey string
	// Composite: each Job is a PodGroup of its own under the gang's CompositePodGroup
	// (kubernetes only).
	Composite bool
}

// Uses tells whether the JobSet asks for gang scheduling: it has the scheduler annotation, or
// another annotation that only podgroups reads (so that a JobSet that sets one without the
// scheduler is told so rather than silently ignored).
func Uses(js *jobsetv1alpha2.JobSet) bool {
	for _, k := range []string{contract.SchedulerAnnotationKey, contract.NetworkTopologyAnnotationKey, contract.ScheduleTimeoutAnnotationKey, contract.TopologyKeyAnnotationKey, contract.CompositeAnnotationKey} {
		if _, ok := js.Annotations[k]; ok {
			return true
		}
	}
	return false
}

// ImmutableKeys are the JobSet annotations podgroups reads: none may change after creation.
var ImmutableKeys = []string{contract.SchedulerAnnotationKey, contract.VolcanoQueueNameAnnotationKey, contract.NetworkTopologyAnnotationKey, contract.ScheduleTimeoutAnnotationKey, contract.TopologyKeyAnnotationKey, contract.CompositeAnnotationKey}

// Parse reads the JobSet's podgroups annotations, every problem a field error: an unknown
// scheduler, a malformed queue, topology or timeout, and a setting the chosen scheduler does
// not have (a queue or topology for coscheduling, a timeout for Volcano).
func Parse(js *jobsetv1alpha2.JobSet) (Settings, field.ErrorList) {
	var s Settings
	var errs field.ErrorList
	a := js.Annotations
	path := contract.JobSetAnnotationPath
	value, ok := a[contract.SchedulerAnnotationKey]
	if !ok {
		return s, field.ErrorList{field.Required(path(contract.SchedulerAnnotationKey),
			fmt.Sprintf("is required by the other %s annotations: %q, %q or %q", "podgroups.jobset-addons.io", contract.SchedulerVolcano, contract.SchedulerCoscheduling, contract.SchedulerKubernetes))}
	}
	s.Scheduler, errs = contract.ParseScheduler(value, path(contract.SchedulerAnnotationKey))
	onlyFor := func(key string, backend contract.Scheduler) bool {
		if s.Scheduler != "" && s.Scheduler != backend {
			msg := fmt.Sprintf("applies only to scheduler %q, not %q", backend, s.Scheduler)
			if key == contract.NetworkTopologyAnnotationKey && s.Scheduler == contract.SchedulerKubernetes {
				msg += fmt.Sprintf(": Volcano's tiers do not map to the Workload API; name a node label with %s instead", contract.TopologyKeyAnnotationKey)
			}
			errs = append(errs, field.Forbidden(path(key), msg))
			return false
		}
		return true
	}
	if q, ok := a[contract.VolcanoQueueNameAnnotationKey]; ok && onlyFor(contract.VolcanoQueueNameAnnotationKey, contract.SchedulerVolcano) {
		for _, msg := range validation.IsDNS1123Subdomain(q) {
			errs = append(errs, field.Invalid(path(contract.VolcanoQueueNameAnnotationKey), q, msg))
		}
		s.Queue = q
	}
	if v, ok := a[contract.NetworkTopologyAnnotationKey]; ok && onlyFor(contract.NetworkTopologyAnnotationKey, contract.SchedulerVolcano) {
		nt, nerrs := contract.ParseNetworkTopology(v, path(contract.NetworkTopologyAnnotationKey))
		errs = append(errs, nerrs...)
		s.NetworkTopology = &nt
	}
	if v, ok := a[contract.TopologyKeyAnnotationKey]; ok && onlyFor(contract.TopologyKeyAnnotationKey, contract.SchedulerKubernetes) {
		var kerrs field.ErrorList
		s.TopologyKey, kerrs = contract.ParseTopologyKey(v, path(contract.TopologyKeyAnnotationKey))
		errs = append(errs, kerrs...)
	}
	if v, ok := a[contract.CompositeAnnotationKey]; ok && onlyFor(contract.CompositeAnnotationKey, contract.SchedulerKubernetes) {
		var cerrs field.ErrorList
		s.Composite, cerrs = contract.ParseComposite(v, path(contract.CompositeAnnotationKey))
		errs = append(errs, cerrs...)
	}
	if v, ok := a[contract.ScheduleTimeoutAnnotationKey]; ok && onlyFor(contract.ScheduleTimeoutAnnotationKey, contract.SchedulerCoscheduling) {
		t, terrs := contract.ParseScheduleTimeout(v, path(contract.ScheduleTimeoutAnnotationKey))
		errs = append(errs, terrs...)
		s.ScheduleTimeoutSeconds = ptr.To(t)
	}
	return s, errs
}

// Gang is one PodGroup's worth of a JobSet: the ReplicatedJobs of one stage.
type Gang struct {
	// Name is the PodGroup's name: <jobset>, or <jobset>-stage-<i> when the JobSet is sequenced.
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

// Gangs are the JobSet's gangs, one per stage, or errors (with JobSet paths) when its stages
// cannot be computed or a gang's name is not valid.
func Gangs(js *jobsetv1alpha2.JobSet, scheduler contract.Scheduler) ([]Gang, field.ErrorList) {
	stages, errs := jobsets.Stages(js)
	if len(errs) > 0 {
		return nil, errs
	}
	if len(stages) == 0 {
		return nil, nil
	}
	sequenced := len(stages) > 1
	composite := false
	if v, ok := js.Annotations[contract.CompositeAnnotationKey]; ok && scheduler == contract.SchedulerKubernetes {
		composite, _ = contract.ParseComposite(v, nil)
	}
	if composite {
		if errs := compositeErrors(js, stages); len(errs) > 0 {
			return nil, errs
		}
	}
	var gangs []Gang
	for _, st := range stages {
		name, err := Name(js.Name, st.Index, sequenced)
		if err != nil {
			return nil, field.ErrorList{field.Invalid(field.NewPath("metadata", "name"), js.Name, err.Error())}
		}
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
			errs = append(errs, field.Invalid(field.NewPath("spec", "replicatedJobs"), members,
				fmt.Sprintf("stage %d has %d pods, more than a PodGroup's minMember can hold (%d)", st.Index, members, math.MaxInt32)))
			continue
		}
		g.MinMember = int32(members)
		switch {
		case composite:
			for _, rjName := range st.ReplicatedJobs {
				rj := jobsets.ReplicatedJob(js, rjName)
				_, claims := podGroupClaims(js, rjName)
				for i := range rj.Replicas {
					g.Jobs = append(g.Jobs, Job{Name: jobsets.JobName(js.Name, rjName, i), ReplicatedJob: rjName, Pods: PodsPerJob(rj), Claims: claims})
				}
			}
		case scheduler == contract.SchedulerKubernetes && len(st.ReplicatedJobs) == 1:
			g.ClaimsOf, g.Claims = podGroupClaims(js, st.ReplicatedJobs[0])
		}
		gangs = append(gangs, g)
	}
	if len(errs) > 0 {
		return nil, errs
	}
	if scheduler == contract.SchedulerKubernetes && len(gangs) > MaxKubernetesGangs {
		return nil, field.ErrorList{field.Invalid(field.NewPath("spec", "replicatedJobs"), len(gangs),
			fmt.Sprintf("makes %d stages, each a PodGroup template of the JobSet's one Workload, and a Workload holds at most %d (WorkloadMaxPodGroupTemplates of scheduling.k8s.io/v1beta1): "+
				"put ReplicatedJobs that may start together in one stage, or use scheduler %q", len(gangs), MaxKubernetesGangs, contract.SchedulerVolcano))}
	}
	// The last gang's name is the longest.
	if last := gangs[len(gangs)-1].Name; scheduler == contract.SchedulerCoscheduling {
		for _, msg := range validation.IsValidLabelValue(last) {
			errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), js.Name,
				fmt.Sprintf("makes the PodGroup name %q, which coscheduling needs as the value of the pod label %s: %s", last, contract.CoschedulingPodGroupLabelKey, msg)))
		}
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return gangs, nil
}

// compositeErrors refuses what a composite gang cannot be made of yet: several stages (one
// CompositePodGroup per stage is not built), more ReplicatedJobs than a CompositePodGroup
// template holds PodGroup templates (8), and Job names that are no object names.
func compositeErrors(js *jobsetv1alpha2.JobSet, stages []contract.Stage) field.ErrorList {
	path := contract.JobSetAnnotationPath(contract.CompositeAnnotationKey)
	if len(stages) > 1 {
		return field.ErrorList{field.Forbidden(path, fmt.Sprintf("a composite gang is made for a JobSet of one stage, and this one is sequenced into %d: drop one of the two", len(stages)))}
	}
	if n := len(js.Spec.ReplicatedJobs); n > MaxKubernetesGangs {
		return field.ErrorList{field.Forbidden(path, fmt.Sprintf("a composite gang holds one PodGroup template per ReplicatedJob, at most %d, and this JobSet has %d", MaxKubernetesGangs, n))}
	}
	var errs field.ErrorList
	for i, rj := range js.Spec.ReplicatedJobs {
		if _, err := contract.JobPodGroupName(jobsets.JobName(js.Name, rj.Name, max(rj.Replicas-1, 0))); err != nil {
			errs = append(errs, field.Invalid(field.NewPath("spec", "replicatedJobs").Index(i).Child("name"), rj.Name, err.Error()))
		}
	}
	return errs
}

// podGroupClaims are the ReplicatedJob's resourceclaims template names when they go on its
// Job's PodGroup (jobsets.ClaimsOnPodGroup), or none. Templates that do not parse go nowhere:
// the resourceclaims webhook refuses them.
func podGroupClaims(js *jobsetv1alpha2.JobSet, rjName string) (string, []string) {
	value, ok := jobsets.ReplicatedJob(js, rjName).Template.Annotations[contract.TemplatesAnnotationKey]
	if !ok {
		return "", nil
	}
	templates, errs := contract.ParseResourceClaimTemplates(value, field.NewPath("templates"))
	if len(errs) > 0 || !jobsets.ClaimsOnPodGroup(js, rjName, len(templates)) {
		return "", nil
	}
	own := jobsets.ReplicatedJob(js, rjName).Template.Spec.Template.Spec.ResourceClaims
	var names []string
	for _, t := range templates {
		// A pod template's own claim of the name wins over the template (the resourceclaims Job
		// webhook leaves it): the pods do not use the Job's claim, so the PodGroup does not list it.
		if !slices.ContainsFunc(own, func(c corev1.PodResourceClaim) bool { return c.Name == t.Name }) {
			names = append(names, t.Name)
		}
	}
	if len(names) == 0 {
		return "", nil
	}
	return rjName, names
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

// Inject names the gang in every pod template of the JobSet (the Volcano group-name
// annotation and queue, the coscheduling pod-group label, or spec.schedulingGroup.podGroupName
// for kube-scheduler) and, for the second schedulers, sets schedulerName where it is empty. It
// is idempotent.
func Inject(js *jobsetv1alpha2.JobSet, s Settings, gangs []Gang, names SchedulerNames) {
	for _, g := range gangs {
		for _, rjName := range g.Stage.ReplicatedJobs {
			pt := &jobsets.ReplicatedJob(js, rjName).Template.Spec.Template
			switch s.Scheduler {
			case contract.SchedulerVolcano:
				pt.Annotations = with(pt.Annotations, contract.VolcanoGroupNameAnnotationKey, g.Name)
				if s.Queue != "" {
					pt.Annotations = with(pt.Annotations, contract.VolcanoQueueNameAnnotationKey, s.Queue)
				}
			case contract.SchedulerCoscheduling:
				pt.Labels = with(pt.Labels, contract.CoschedulingPodGroupLabelKey, g.Name)
			case contract.SchedulerKubernetes:
				// In a composite gang, the podgroups Job webhook names each Job's own PodGroup in
				// its place; a pod that somehow kept the gang's name waits (no PodGroup has it).
				pt.Spec.SchedulingGroup = &corev1.PodSchedulingGroup{PodGroupName: ptr.To(g.Name)}
				if len(g.Jobs) > 0 {
					tmpl := &jobsets.ReplicatedJob(js, rjName).Template
					tmpl.Annotations = with(tmpl.Annotations, contract.PerJobPodGroupAnnotationKey, contract.EnabledValue)
				}
			}
			if pt.Spec.SchedulerName == "" {
				pt.Spec.SchedulerName = names.For(s.Scheduler)
			}
		}
	}
}

// RestoreSchedulingGroups puts back, in each pod template of newJS, the spec.schedulingGroup
// that the same ReplicatedJob's template of oldJS has and newJS lost, and returns the names of
// those ReplicatedJobs. An update made by a client built on a Kubernetes API without that pod
// field (1.37's) drops it, because a JobSet is a custom resource: a JSON merge patch or an
// update rewrites spec.replicatedJobs whole. Kueue v0.17.0 (k8s.io/api v0.35) does so when it
// admits or evicts a JobSet, and JobSet's webhook then refuses the change of the pod template,
// so the JobSet would stay suspended. Only a template whose schedulingGroup is gone is touched.
func RestoreSchedulingGroups(oldJS, newJS *jobsetv1alpha2.JobSet) []string {
	var restored []string
	for i := range newJS.Spec.ReplicatedJobs {
		rj := &newJS.Spec.ReplicatedJobs[i]
		old := jobsets.ReplicatedJob(oldJS, rj.Name)
		if old == nil || old.Template.Spec.Template.Spec.SchedulingGroup == nil || rj.Template.Spec.Template.Spec.SchedulingGroup != nil {
			continue
		}
		rj.Template.Spec.Template.Spec.SchedulingGroup = old.Template.Spec.Template.Spec.SchedulingGroup.DeepCopy()
		restored = append(restored, rj.Name)
	}
	return restored
}

// Admitted tells whether every pod template names its gang, that is, whether the mutating
// webhook ran when the JobSet was created.
func Admitted(js *jobsetv1alpha2.JobSet, s Settings, gangs []Gang) bool {
	for _, g := range gangs {
		for _, rjName := range g.Stage.ReplicatedJobs {
			pt := jobsets.ReplicatedJob(js, rjName).Template.Spec.Template
			var got string
			switch s.Scheduler {
			case contract.SchedulerCoscheduling:
				got = pt.Labels[contract.CoschedulingPodGroupLabelKey]
			case contract.SchedulerKubernetes:
				if sg := pt.Spec.SchedulingGroup; sg != nil {
					got = ptr.Deref(sg.PodGroupName, "")
				}
			default:
				got = pt.Annotations[contract.VolcanoGroupNameAnnotationKey]
			}
			if got != g.Name {
				return false
			}
		}
	}
	return true
}

// SchedulerNameErrors refuses pod templates whose schedulerName is some scheduler other than
// the backend's. SchedulerKubernetes takes any: kube-scheduler serves whichever profile names
// it is configured with.
func SchedulerNameErrors(js *jobsetv1alpha2.JobSet, s Settings, names SchedulerNames) field.ErrorList {
	want := names.For(s.Scheduler)
	if want == "" {
		return nil
	}
	var errs field.ErrorList
	for i, rj := range js.Spec.ReplicatedJobs {
		if got := rj.Template.Spec.Template.Spec.SchedulerName; got != "" && got != want {
			errs = append(errs, field.Invalid(
				field.NewPath("spec", "replicatedJobs").Index(i).Child("template", "spec", "template", "spec", "schedulerName"),
				got, fmt.Sprintf("must be empty or %q: %s=%s gangs this JobSet's pods with %q", want, contract.SchedulerAnnotationKey, s.Scheduler, want)))
		}
	}
	return errs
}

func with(m map[string]string, k, v string) map[string]string {
	if m == nil {
		m = map[string]string{}
	}
	m[k] = v
	return m
}

// PriorityClassReader gets PriorityClasses (a cached client).
type PriorityClassReader interface {
	PriorityClassValue(name string) (int32, bool)
}

// PriorityClass is the gang's PodGroup priorityClassName: the one class of its pod templates,
// or, when they differ, the one with the highest value (a class that does not exist counts as
// 0, and so does no class). warning is not empty when they differ, and says which won.
func (g Gang) PriorityClass(classes PriorityClassReader) (name, warning string) {
	if len(g.PriorityClassNames) == 1 {
		return g.PriorityClassNames[0], ""
	}
	best, bestValue := "", int32(0)
	for i, pc := range g.PriorityClassNames {
		v := int32(0)
		if pc != "" {
			v, _ = classes.PriorityClassValue(pc)
		}
		if i == 0 || v > bestValue {
			best, bestValue = pc, v
		}
	}
	return best, fmt.Sprintf("the pod templates of PodGroup %s have different priorityClassName %q: the PodGroup gets %q, the highest-valued (%d)",
		g.Name, g.PriorityClassNames, best, bestValue)
}

// TrainJobOwner is the name of the Kubeflow Trainer TrainJob that controls the JobSet (its
// controller ownerReference, group trainer.kubeflow.org, kind TrainJob), or "".
func TrainJobOwner(js *jobsetv1alpha2.JobSet) string {
	for _, o := range js.OwnerReferences {
		if o.Controller != nil && *o.Controller && o.Kind == "TrainJob" && groupOf(o.APIVersion) == "trainer.kubeflow.org" {
			return o.Name
		}
	}
	return ""
}

func groupOf(apiVersion string) string {
	group, _, _ := strings.Cut(apiVersion, "/")
	return group
}

// ForeignGangs refuses a JobSet being created whose pod templates already name a gang that
// podgroups would not name there: the coscheduling pod-group label, Volcano's group-name
// annotation or spec.schedulingGroup.podGroupName, set by whoever made the JobSet. Someone else
// then makes (or expects) that gang's PodGroup, and podgroups would make a second one for the
// same pods. The case this is for is Kubeflow Trainer: a TrainJob whose runtime has
// spec.podGroupPolicy makes its own PodGroup (named after the TrainJob) and labels the JobSet's
// pod templates for it; if the runtime's JobSet template also asks podgroups for a gang, the
// JobSet is refused, and Trainer reports the refusal as the TrainJob's Warning event
// TrainJobResourcesCreationFailed. A name podgroups itself would inject (a JobSet re-created from
// an export of one it admitted) is accepted, except in a JobSet a TrainJob controls.
func ForeignGangs(js *jobsetv1alpha2.JobSet, s Settings, gangs []Gang) field.ErrorList {
	owner := TrainJobOwner(js)
	var errs field.ErrorList
	for _, g := range gangs {
		for _, rjName := range g.Stage.ReplicatedJobs {
			i := slices.IndexFunc(js.Spec.ReplicatedJobs, func(rj jobsetv1alpha2.ReplicatedJob) bool { return rj.Name == rjName })
			if i < 0 {
				continue
			}
			pt := js.Spec.ReplicatedJobs[i].Template.Spec.Template
			base := field.NewPath("spec", "replicatedJobs").Index(i).Child("template", "spec", "template")
			check := func(path *field.Path, backend contract.Scheduler, value string) {
				if owner == "" && s.Scheduler == backend && value == g.Name {
					return
				}
				msg := fmt.Sprintf("names the gang %q, which podgroups did not name: whoever set it makes (or expects) that PodGroup, "+
					"and %s=%s asks podgroups to make %q for these pods too; one gang must have one maker: remove one of the two",
					value, contract.SchedulerAnnotationKey, s.Scheduler, g.Name)
				if owner != "" {
					msg = fmt.Sprintf("names the gang %q, set by Kubeflow Trainer for TrainJob %q: its runtime's spec.podGroupPolicy makes a PodGroup of its own, "+
						"and this JobSet's %s=%s asks podgroups to make %q for the same pods; one gang must have one maker: "+
						"remove spec.podGroupPolicy from the TrainingRuntime (podgroups then makes the gang, one per stage) or the podgroups annotations from its JobSet template",
						value, owner, contract.SchedulerAnnotationKey, s.Scheduler, g.Name)
				}
				errs = append(errs, field.Forbidden(path, msg))
			}
			if v, ok := pt.Labels[contract.CoschedulingPodGroupLabelKey]; ok {
				check(base.Child("metadata", "labels").Key(contract.CoschedulingPodGroupLabelKey), contract.SchedulerCoscheduling, v)
			}
			if v, ok := pt.Annotations[contract.VolcanoGroupNameAnnotationKey]; ok {
				check(base.Child("metadata", "annotations").Key(contract.VolcanoGroupNameAnnotationKey), contract.SchedulerVolcano, v)
			}
			if sg := pt.Spec.SchedulingGroup; sg != nil && sg.PodGroupName != nil {
				check(base.Child("spec", "schedulingGroup", "podGroupName"), contract.SchedulerKubernetes, *sg.PodGroupName)
			}
		}
	}
	return errs
}
