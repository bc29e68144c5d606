package controller

import (
	"fmt"

	schedulingv1alpha3 "k8s.io/api/scheduling/v1alpha3"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/component-helpers/scheduling/schedulingv1/workloadbuilder"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/controllers/podgroups/internal/gang"
	"github.com/jobset-addons/jobset-addons/pkg/addon/jobsets"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// The kubernetes backend: Kubernetes' own Workload and PodGroup (scheduling.k8s.io/v1beta1),
// built and validated by component-helpers' workloadbuilder, as the Job controller builds its
// own. One Workload per JobSet holds one PodGroup template per gang, all from the start (the
// API lets no template be added or removed later); each gang's PodGroup is made from its
// template when the gang may run.

// nativeBuilder is the workloadbuilder of gang g alone: a leaf item, the gang policy with
// minCount = the gang's pods, the gang's priority class, the topology key (if any) as its
// scheduling constraint, owned by the JobSet.
func nativeBuilder(js *jobsetv1alpha2.JobSet, g gang.Gang, topologyKey, priorityClass string) (*workloadbuilder.Builder, string, error) {
	return nativeBuild(js, g, func(template string) *workloadbuilder.WorkloadItem {
		return gangItem(template, contract.JobSetAnnotationPath(contract.SchedulerAnnotationKey), nativeMinCount(g), priorityClass, topologyKey)
	})
}

// nativeBuild is the workloadbuilder of the Workload <jobset> with gang g's item, which item
// makes from the template's name (stage-<i>), owned by the JobSet; and that name.
func nativeBuild(js *jobsetv1alpha2.JobSet, g gang.Gang, item func(template string) *workloadbuilder.WorkloadItem) (*workloadbuilder.Builder, string, error) {
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

// gangItem is a workloadbuilder item of the gang policy with minCount, the priority class, and
// the topology key (if any) as its scheduling constraint.
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

// nativeMinCount is the gang's minCount: its pods, at least 1 (the API's minimum; a gang of no
// pods has nothing to hold back).
func nativeMinCount(g gang.Gang) int32 { return max(g.MinMember, 1) }

// nativePodGroupSpec is gang g's PodGroup spec, made by workloadbuilder from the gang's
// template: workloadRef {<jobset>, stage-<i>}, gang minCount, priorityClassName; and, when the
// gang is one Job whose per-Job claims go on its PodGroup, those claims, as the resourceclaims
// Job webhook names them in the pods (see nativeClaims).
func nativePodGroupSpec(js *jobsetv1alpha2.JobSet, g gang.Gang, topologyKey, priorityClass string) schedulingv1beta1.PodGroupSpec {
	if g.Parent != nil {
		spec, err := nativeJobPodGroupSpec(js, g, topologyKey, priorityClass)
		if err != nil {
			panic(fmt.Sprintf("building the PodGroup of Job %s: %v", g.Name, err)) // names were checked by gang.Gangs
		}
		return spec
	}
	b, template, err := nativeBuilder(js, g, topologyKey, priorityClass)
	if err == nil {
		if _, err = b.BuildWorkload(); err == nil {
			var pg *schedulingv1beta1.PodGroup
			if pg, err = b.NewPodGroup(g.Name, template); err == nil {
				if pg.Spec.ResourceClaims, err = nativeClaims(js, g); err == nil {
					return pg.Spec
				}
			}
		}
	}
	// Names were checked by gang.Gangs and the item is fixed: this is a bug.
	panic(fmt.Sprintf("building the PodGroup of %s: %v", g.Name, err))
}

// nativeCompositeBuilder is the workloadbuilder of composite gang g: a composite item named
// stage-<i> whose gang policy asks all of its Jobs (minGroupCount), with one leaf item per
// ReplicatedJob, named as it, whose gang policy asks all of one Job's pods, held to one domain
// of the topology key (if any), with the gang's priority class.
func nativeCompositeBuilder(js *jobsetv1alpha2.JobSet, g gang.Gang, topologyKey, priorityClass string) (*workloadbuilder.Builder, string, error) {
	return nativeBuild(js, g, func(template string) *workloadbuilder.WorkloadItem {
		root := gangItem(template, contract.JobSetAnnotationPath(contract.CompositeAnnotationKey), max(int32(len(g.Jobs)), 1), priorityClass, "")
		for _, rjName := range g.Stage.ReplicatedJobs {
			rj := jobsets.ReplicatedJob(js, rjName)
			root.Children = append(root.Children,
				gangItem(rjName, field.NewPath("spec", "replicatedJobs").Key(rjName), max(gang.PodsPerJob(rj), 1), priorityClass, topologyKey))
		}
		return root
	})
}

// NativeCompositePodGroup is composite gang g's CompositePodGroup, of the gang's name, made by
// workloadbuilder from its template, with our labels, the hash of its spec and the JobSet as
// controller owner.
func NativeCompositePodGroup(js *jobsetv1alpha2.JobSet, g gang.Gang, topologyKey, priorityClass string) (*schedulingv1alpha3.CompositePodGroup, error) {
	b, template, err := nativeCompositeBuilder(js, g, topologyKey, priorityClass)
	if err != nil {
		return nil, err
	}
	if _, err := b.BuildWorkload(); err != nil {
		return nil, fmt.Errorf("building the Workload template of %s: %w", g.Name, err)
	}
	cpg, err := b.NewCompositePodGroup(g.Name, template)
	if err != nil {
		return nil, err
	}
	cpg.Labels = ourLabels(js, &g)
	cpg.Annotations = map[string]string{contract.PodGroupSpecHashAnnotationKey: hash(cpg.Spec, cpg.Labels)}
	cpg.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(js, jobsetv1alpha2.GroupVersion.WithKind("JobSet"))}
	return cpg, nil
}

// nativeJobPodGroupSpec is the spec of the PodGroup of one Job of a composite gang (g, with
// Parent): its ReplicatedJob's PodGroup template in the parent's CompositePodGroup template,
// workloadRef to it, the parent as parentCompositePodGroupName, and the Job's claims.
func nativeJobPodGroupSpec(js *jobsetv1alpha2.JobSet, g gang.Gang, topologyKey, priorityClass string) (schedulingv1beta1.PodGroupSpec, error) {
	b, _, err := nativeCompositeBuilder(js, *g.Parent, topologyKey, priorityClass)
	if err != nil {
		return schedulingv1beta1.PodGroupSpec{}, err
	}
	wl, err := b.BuildWorkload()
	if err != nil {
		return schedulingv1beta1.PodGroupSpec{}, err
	}
	var tmpl *schedulingv1beta1.PodGroupTemplate
	for i := range wl.Spec.CompositePodGroupTemplates {
		for j := range wl.Spec.CompositePodGroupTemplates[i].PodGroupTemplates {
			if t := &wl.Spec.CompositePodGroupTemplates[i].PodGroupTemplates[j]; t.Name == g.Template {
				tmpl = t
			}
		}
	}
	if tmpl == nil {
		return schedulingv1beta1.PodGroupSpec{}, fmt.Errorf("no PodGroup template %q in the composite template of %s", g.Template, g.Parent.Name)
	}
	spec := schedulingv1beta1.PodGroupSpec{
		ParentCompositePodGroupName: ptr.To(g.Parent.Name),
		WorkloadRef:                 &schedulingv1beta1.WorkloadReference{WorkloadName: wl.Name, TemplateName: tmpl.Name},
		SchedulingPolicy:            *tmpl.SchedulingPolicy.DeepCopy(),
		SchedulingConstraints:       tmpl.SchedulingConstraints.DeepCopy(),
		PriorityClassName:           tmpl.PriorityClassName,
	}
	spec.ResourceClaims, err = nativeClaims(js, g)
	return spec, err
}

// nativeClaims are the PodGroup claims of gang g: for each of its Job's resourceclaims templates,
// {name: <template>, resourceClaimName: <job>-<template>} (<job>-r<N>-<template> in restart
// attempt N, contract.ResourceClaimName), the very entry that the resourceclaims Job webhook
// puts in the pods' spec.resourceClaims. kube-scheduler (DRAWorkloadResourceClaims) then
// reserves the claim for the PodGroup, not for each pod. None when the gang is not one such Job.
func nativeClaims(js *jobsetv1alpha2.JobSet, g gang.Gang) ([]schedulingv1beta1.PodGroupResourceClaim, error) {
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

// nativeClaimsChanged tells whether the claims of our PodGroup on the server (have, whole) are
// not those want lists. The API does not let a PodGroup's claims change: it is deleted and made
// again (a JobSet's restart names new claims, contract.ResourceClaimName).
func nativeClaimsChanged(have, want client.Object) bool {
	return !equality.Semantic.DeepEqual(have.(*schedulingv1beta1.PodGroup).Spec.ResourceClaims, want.(*schedulingv1beta1.PodGroup).Spec.ResourceClaims)
}

// NativeWorkload is the JobSet's Workload: one PodGroup template per gang, each compiled by
// workloadbuilder, the JobSet as controllerRef and controller owner, our labels and the hash of
// what it holds. priorityClass gives each gang's class.
func NativeWorkload(js *jobsetv1alpha2.JobSet, gangs []gang.Gang, topologyKey string, priorityClass func(gang.Gang) string) (*schedulingv1beta1.Workload, error) {
	var wl *schedulingv1beta1.Workload
	for _, g := range gangs {
		build := nativeBuilder
		if len(g.Jobs) > 0 {
			build = nativeCompositeBuilder
		}
		b, _, err := build(js, g, topologyKey, priorityClass(g))
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

// adoptNativeWorkload copies into have the labels and hash of want and the one thing of its
// templates the API lets change: each gang's minCount. Templates are neither added nor
// removed (the API refuses it), and priorityClassName, fixed at creation, stays.
func adoptNativeWorkload(have, want client.Object) {
	adoptMeta(have, want)
	h, w := have.(*schedulingv1beta1.Workload), want.(*schedulingv1beta1.Workload)
	for i := range h.Spec.PodGroupTemplates {
		ht := &h.Spec.PodGroupTemplates[i]
		for _, wt := range w.Spec.PodGroupTemplates {
			if wt.Name == ht.Name && ht.SchedulingPolicy.Gang != nil && wt.SchedulingPolicy.Gang != nil {
				ht.SchedulingPolicy.Gang.MinCount = wt.SchedulingPolicy.Gang.MinCount
			}
		}
	}
}

// adoptNativePodGroup copies into have the labels and hash of want and its gang minCount, the
// one field of a PodGroup's spec the API lets change (priorityClassName is immutable, and the
// apiserver's priority admission wrote priority beside it).
func adoptNativePodGroup(have, want client.Object) {
	adoptMeta(have, want)
	h, w := have.(*schedulingv1beta1.PodGroup), want.(*schedulingv1beta1.PodGroup)
	if h.Spec.SchedulingPolicy.Gang != nil && w.Spec.SchedulingPolicy.Gang != nil {
		h.Spec.SchedulingPolicy.Gang.MinCount = w.Spec.SchedulingPolicy.Gang.MinCount
	}
}

// nativeDroppedClaims: an apiserver without the feature gate DRAWorkloadResourceClaims drops
// resourceClaims from a PodGroup as it is created.
func nativeDroppedClaims(g gang.Gang, o client.Object) string {
	if len(g.Claims) == 0 || len(o.(*schedulingv1beta1.PodGroup).Spec.ResourceClaims) > 0 {
		return ""
	}
	return fmt.Sprintf("The apiserver dropped the claims %v of Job %s from PodGroup %s: it needs the feature gate DRAWorkloadResourceClaims, and kube-scheduler and "+
		"kube-controller-manager too; each claim is reserved for each pod instead, at most %d pods", g.Claims, g.ClaimsJob(o.GetLabels()[contract.JobSetNameLabelKey]), o.GetName(), jobsets.MaxClaimSharers)
}

// nativeDroppedTopology: an apiserver without the feature gate TopologyAwareWorkloadScheduling
// drops schedulingConstraints from a PodGroup as it is created.
func nativeDroppedTopology(s gang.Settings, o client.Object) string {
	if s.TopologyKey == "" || o.(*schedulingv1beta1.PodGroup).Spec.SchedulingConstraints != nil {
		return ""
	}
	return fmt.Sprintf("The apiserver dropped the topology constraint (%s %s) from PodGroup %s: it needs the feature gate TopologyAwareWorkloadScheduling, "+
		"and kube-scheduler too; the gang is scheduled without it", contract.TopologyKeyAnnotationKey, s.TopologyKey, o.GetName())
}
