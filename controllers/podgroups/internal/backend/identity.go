package backend

import (
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/pkg/addon/checks/podgroups"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// Identity is whose an existing gang object of a name the JobSet's gang object of labels (ours:
// the stage, on a sequenced JobSet's) takes must be to be the JobSet's (contract.Identity.Of):
// names are joined with "-", so JobSet a-stage-1's PodGroup and stage 1's of JobSet a coincide.
// One another JobSet's gangs hold is Foreign; one an earlier JobSet of this name left (the
// garbage collector's to delete) is Retained.
func Identity(js *jobsetv1alpha2.JobSet, labels map[string]string) contract.Identity {
	want := map[string]string{}
	if v, ok := labels[contract.PodGroupStageLabelKey]; ok {
		want[contract.PodGroupStageLabelKey] = v
	}
	return contract.Identity{ManagedBy: contract.PodGroupsManagedByValue, JobSet: js.Name, UID: js.UID, Labels: want, Parts: []string{contract.PodGroupStageLabelKey}}
}

// Named is one gang object of a JobSet, by kind and name, with whose it must be (Identity) and
// how a message names it ("the coscheduling PodGroup train-stage-1").
type Named struct {
	Kind     schema.GroupVersionKind
	Name     string
	What     string
	Identity contract.Identity
}

// JobObjects are the gang objects whose pods of Job job (of ReplicatedJob rj) are scheduled
// against: its Workload (a backend that makes one), its gang's CompositePodGroup and its own
// PodGroup (a composite gang), or its gang's PodGroup. None when rj is in none of gangs.
// composite is the kind of CompositePodGroup served (ServedCompositeKind); zero: none, and no
// CompositePodGroup is listed.
func JobObjects(b Backend, js *jobsetv1alpha2.JobSet, gangs []podgroups.Gang, rj, job string, composite schema.GroupVersionKind) []Named {
	g, ok := GangOf(gangs, rj)
	if !ok {
		return nil
	}
	var out []Named
	if wb, ok := b.(Workloads); ok {
		if name, err := contract.WorkloadName(js.Name); err == nil {
			out = append(out, Named{Kind: wb.WorkloadKind(), Name: name, What: "the Workload " + name, Identity: Identity(js, ourLabels(js, nil))})
		}
	}
	pg := "the " + string(b.Scheduler()) + " PodGroup "
	if len(g.Jobs) > 0 {
		if !composite.Empty() {
			out = append(out, Named{Kind: composite, Name: g.Name, What: "the CompositePodGroup " + g.Name, Identity: Identity(js, ourLabels(js, &g))})
		}
		for _, c := range g.Children() {
			if c.Name == job {
				out = append(out, Named{Kind: b.Kind(), Name: c.Name, What: pg + c.Name, Identity: Identity(js, ourLabels(js, &c))})
			}
		}
		return out
	}
	return append(out, Named{Kind: b.Kind(), Name: g.Name, What: pg + g.Name, Identity: Identity(js, ourLabels(js, &g))})
}

// Objects are every gang object of the JobSet's gangs: its Workload (a backend that makes
// one), and each gang's CompositePodGroup and PodGroups (JobObjects, for every Job).
func Objects(b Backend, js *jobsetv1alpha2.JobSet, gangs []podgroups.Gang, composite schema.GroupVersionKind) []Named {
	var out []Named
	seen := map[schema.GroupVersionKind]map[string]bool{}
	for _, g := range gangs {
		jobs := []string{""}
		for _, j := range g.Jobs {
			jobs = append(jobs, j.Name)
		}
		for _, job := range jobs {
			for _, o := range JobObjects(b, js, []podgroups.Gang{g}, g.Stage.ReplicatedJobs[0], job, composite) {
				if seen[o.Kind] == nil {
					seen[o.Kind] = map[string]bool{}
				}
				if !seen[o.Kind][o.Name] {
					seen[o.Kind][o.Name] = true
					out = append(out, o)
				}
			}
		}
	}
	return out
}

// GangOf is the gang of gangs that ReplicatedJob rj is in, and whether there is one.
func GangOf(gangs []podgroups.Gang, rj string) (podgroups.Gang, bool) {
	for _, g := range gangs {
		if slices.Contains(g.Stage.ReplicatedJobs, rj) {
			return g, true
		}
	}
	return podgroups.Gang{}, false
}

// Build is o, one of the gang objects of the JobSet's gangs (JobObjects, Objects), as the
// reconciler makes it: the JobSet's Workload, a composite gang's CompositePodGroup (at o's
// kind), or a unit's PodGroup. class is a gang's priority class, queue Volcano's default.
func (o Named) Build(b Backend, js *jobsetv1alpha2.JobSet, s podgroups.Settings, gangs []podgroups.Gang, class func(podgroups.Gang) string, queue string) (client.Object, error) {
	if wb, ok := b.(Workloads); ok && o.Kind == wb.WorkloadKind() {
		return wb.BuildWorkload(js, gangs, s, class)
	}
	if o.Kind == b.Kind() {
		for _, u := range podgroups.Units(gangs) {
			if u.Name == o.Name {
				return b.Build(js, u, s, class(u), queue), nil
			}
		}
	}
	if cb, ok := b.(Composites); ok {
		for _, g := range gangs {
			if g.Name == o.Name && len(g.Jobs) > 0 {
				cpg, err := cb.BuildComposite(js, g, s, class(g))
				if err != nil {
					return nil, err
				}
				return CompositeObject(cpg, o.Kind)
			}
		}
	}
	return nil, fmt.Errorf("no gang of JobSet %s is %s", js.Name, o.What)
}

// GangIndex indexes JobSets by the gang objects they make (GangKeys), so that a new JobSet
// whose gang object takes the name of a living JobSet's is refused before either is made.
const GangIndex = "podgroups.gangs"

// GangKey is GangIndex's value for the gang object name of kind gvk.
func GangKey(gvk schema.GroupVersionKind, name string) string {
	return gvk.GroupKind().String() + "/" + name
}

// GangKeys is GangIndex's function: the keys (GangKey) of every gang object (Objects) of a
// JobSet that asks for a backend of r; none for one whose gangs do not read.
func GangKeys(r *Registry, composite schema.GroupVersionKind) client.IndexerFunc {
	return func(o client.Object) []string {
		js, ok := o.(*jobsetv1alpha2.JobSet)
		if !ok || !podgroups.Uses(js) {
			return nil
		}
		s, gangs, errs := podgroups.Read(js)
		b := r.For(s.Scheduler)
		if b == nil || len(errs.All()) > 0 {
			return nil
		}
		var keys []string
		for _, n := range Objects(b, js, gangs, composite) {
			keys = append(keys, GangKey(n.Kind, n.Name))
		}
		return keys
	}
}
