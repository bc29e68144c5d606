package backend

import (
	"fmt"

	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/component-helpers/scheduling/schedulingv1/workloadbuilder"
	"k8s.io/utils/ptr"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/pkg/addon/checks/podgroups"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// The Kubernetes backend's Workload, and the PodGroups made from its templates.

// BuildWorkload is the JobSet's Workload: one PodGroup template per gang (a composite template
// for a composite gang), each compiled by workloadbuilder, the JobSet as controllerRef and
// controller owner, our labels and the hash of what it holds.
func (Kubernetes) BuildWorkload(js *jobsetv1alpha2.JobSet, gangs []podgroups.Gang, s podgroups.Settings, priorityClass func(podgroups.Gang) string) (*schedulingv1beta1.Workload, error) {
	var wl *schedulingv1beta1.Workload
	for _, g := range gangs {
		build := gangBuilder
		if len(g.Jobs) > 0 {
			build = compositeBuilder
		}
		b, _, err := build(js, g, s.TopologyKey, priorityClass(g))
		if err != nil {
			return nil, err
		}
		one, err := b.BuildWorkload()
		if err != nil {
			return nil, fmt.Errorf("building the Workload template of %s: %w", g.Name, err)
		}
		if wl == nil {
			wl = one.DeepCopy()
			continue
		}
		wl.Spec.PodGroupTemplates = append(wl.Spec.PodGroupTemplates, one.Spec.PodGroupTemplates...)
		wl.Spec.CompositePodGroupTemplates = append(wl.Spec.CompositePodGroupTemplates, one.Spec.CompositePodGroupTemplates...)
	}
	if wl == nil {
		return nil, fmt.Errorf("the JobSet has no gang")
	}
	wl.Labels = ourLabels(js, nil)
	wl.Annotations = map[string]string{contract.PodGroupSpecHashAnnotationKey: hash(wl.Spec, wl.Labels)}
	return wl, nil
}

// AdoptWorkload copies into have the labels and hash of want and the one thing of its
// templates the API lets change: each gang's minCount. Templates are neither added nor
// removed (the API refuses it), and priorityClassName, fixed at creation, stays.
func (Kubernetes) AdoptWorkload(have, want *schedulingv1beta1.Workload) {
	AdoptMeta(have, want)
	for i := range have.Spec.PodGroupTemplates {
		ht := &have.Spec.PodGroupTemplates[i]
		for _, wt := range want.Spec.PodGroupTemplates {
			if wt.Name == ht.Name && ht.SchedulingPolicy.Gang != nil && wt.SchedulingPolicy.Gang != nil {
				ht.SchedulingPolicy.Gang.MinCount = wt.SchedulingPolicy.Gang.MinCount
			}
		}
	}
}

// gangBuilder is the workloadbuilder of gang g alone: a leaf item, the gang policy with
// minCount = the gang's pods, the gang's priority class, the topology key (if any) as its
// scheduling constraint, owned by the JobSet.
func gangBuilder(js *jobsetv1alpha2.JobSet, g podgroups.Gang, topologyKey, priorityClass string) (*workloadbuilder.Builder, string, error) {
	return workloadOf(js, g, func(template string) *workloadbuilder.WorkloadItem {
		return gangItem(template, contract.JobSetAnnotationPath(contract.SchedulerAnnotationKey), max(g.MinMember, 1), priorityClass, topologyKey)
	})
}

// workloadOf is the workloadbuilder of the Workload <jobset>, owned by the JobSet, with one
// item for gang g, which item makes from the name of the gang's template (stage-<i>); it also
// returns that template name.
func workloadOf(js *jobsetv1alpha2.JobSet, g podgroups.Gang, item func(template string) *workloadbuilder.WorkloadItem) (*workloadbuilder.Builder, string, error) {
	template, err := contract.PodGroupTemplateName(g.Stage.Index)
	if err != nil {
		return nil, "", err
	}
	name, err := contract.WorkloadName(js.Name)
	if err != nil {
		return nil, "", err
	}
	b := workloadbuilder.NewBuilder(item(template), workloadbuilder.BuildOptions{
		Name:            name,
		Namespace:       js.Namespace,
		Owner:           metav1.NewControllerRef(js, jobsetv1alpha2.GroupVersion.WithKind("JobSet")),
		AllowedPolicies: []workloadbuilder.SchedulingPolicyOption{workloadbuilder.GangPolicy},
	})
	return b, template, nil
}

// gangItem is a workloadbuilder item of the gang policy with minCount (at least 1, the API's
// minimum: a gang of no pods has nothing to hold back), the priority class, and the topology
// key (if any) as its scheduling constraint.
func gangItem(name string, path *field.Path, minCount int32, priorityClass, topologyKey string) *workloadbuilder.WorkloadItem {
	item := &workloadbuilder.WorkloadItem{
		Name: name,
		Path: path,
		DefaultConfig: &workloadbuilder.SchedulingConfig{
			Policy:            &workloadbuilder.SchedulingPolicy{Gang: &workloadbuilder.GangSchedulingPolicy{MinCount: ptr.To(minCount)}},
			PriorityClassName: priorityClass,
		},
	}
	if topologyKey != "" {
		item.DefaultConfig.Constraints = &workloadbuilder.SchedulingConstraints{Topology: []schedulingv1beta1.TopologyConstraint{{Key: topologyKey}}}
	}
	return item
}

// podGroupSpec is gang g's PodGroup spec, made by workloadbuilder from the gang's template:
// workloadRef {<jobset>, stage-<i>}, gang minCount, priorityClassName; and, when the gang is
// one Job whose per-Job claims go on its PodGroup, those claims (claimsOf). A composite gang's
// Job's is jobPodGroupSpec.
func podGroupSpec(js *jobsetv1alpha2.JobSet, g podgroups.Gang, topologyKey, priorityClass string) schedulingv1beta1.PodGroupSpec {
	build := func() (schedulingv1beta1.PodGroupSpec, error) {
		if g.Parent != nil {
			return jobPodGroupSpec(js, g, topologyKey, priorityClass)
		}
		b, template, err := gangBuilder(js, g, topologyKey, priorityClass)
		if err != nil {
			return schedulingv1beta1.PodGroupSpec{}, err
		}
		if _, err := b.BuildWorkload(); err != nil {
			return schedulingv1beta1.PodGroupSpec{}, err
		}
		pg, err := b.NewPodGroup(g.Name, template)
		if err != nil {
			return schedulingv1beta1.PodGroupSpec{}, err
		}
		pg.Spec.ResourceClaims, err = claimsOf(js, g)
		return pg.Spec, err
	}
	spec, err := build()
	if err != nil {
		// Names were checked by podgroups.Gangs and Validate, and the items are fixed: this is a bug.
		panic(fmt.Sprintf("building the PodGroup of %s: %v", g.Name, err))
	}
	return spec
}

// claimsOf are the PodGroup claims of gang g: for each of its Job's resourceclaims templates,
// {name: <template>, resourceClaimName: <job>-<template>} (<job>-r<N>-<template> in restart
// attempt N, contract.ResourceClaimName), the very entry that the resourceclaims Job webhook
// puts in the pods' spec.resourceClaims. kube-scheduler (DRAWorkloadResourceClaims) then
// reserves the claim for the PodGroup, not for each pod. None when the gang is not one such Job.
func claimsOf(js *jobsetv1alpha2.JobSet, g podgroups.Gang) ([]schedulingv1beta1.PodGroupResourceClaim, error) {
	if len(g.Claims) == 0 {
		return nil, nil
	}
	job := g.ClaimsJob(js.Name)
	claims := make([]schedulingv1beta1.PodGroupResourceClaim, len(g.Claims))
	for i, t := range g.Claims {
		name, err := contract.ResourceClaimName(job, t, int(js.Status.Restarts))
		if err != nil {
			return nil, err
		}
		claims[i] = schedulingv1beta1.PodGroupResourceClaim{Name: t, ResourceClaimName: ptr.To(name)}
	}
	return claims, nil
}
