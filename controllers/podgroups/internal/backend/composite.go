package backend

import (
	"fmt"

	schedulingv1alpha3 "k8s.io/api/scheduling/v1alpha3"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/component-helpers/scheduling/schedulingv1/workloadbuilder"
	"k8s.io/utils/ptr"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/pkg/addon/checks/podgroups"
	"github.com/jobset-addons/jobset-addons/pkg/addon/jobsets"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// A composite gang of the Kubernetes backend (contract.CompositeAnnotationKey): all of its Jobs
// or none, each Job a PodGroup of its own under the gang's CompositePodGroup (feature gate
// CompositePodGroup: scheduling.k8s.io/v1alpha3 in Kubernetes 1.37, v1beta1 from 1.38).

// CompositeKinds are the kinds of a composite gang's CompositePodGroup, the one to use first:
// scheduling.k8s.io/v1beta1 (Kubernetes 1.38, beta) and v1alpha3 (1.37, alpha; 1.38 serves it
// too where turned on). Their fields are the same; the Go type is v1alpha3's (the k8s.io/api of
// the add-ons is 1.37's), written at the version the API server serves (CompositeObject).
var CompositeKinds = []schema.GroupVersionKind{
	schedulingv1beta1.SchemeGroupVersion.WithKind("CompositePodGroup"),
	schedulingv1alpha3.SchemeGroupVersion.WithKind("CompositePodGroup"),
}

// ServedCompositeKind is the first of CompositeKinds that mapper (the API server's discovery)
// finds served, or the zero kind when it serves neither.
func ServedCompositeKind(mapper apimeta.RESTMapper) (schema.GroupVersionKind, error) {
	for _, gvk := range CompositeKinds {
		_, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		switch {
		case err == nil:
			return gvk, nil
		case !apimeta.IsNoMatchError(err):
			return schema.GroupVersionKind{}, fmt.Errorf("looking up %s: %w", gvk, err)
		}
	}
	return schema.GroupVersionKind{}, nil
}

// CompositeObject is cpg as an object of kind gvk, one of CompositeKinds.
func CompositeObject(cpg *schedulingv1alpha3.CompositePodGroup, gvk schema.GroupVersionKind) (*unstructured.Unstructured, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(cpg)
	if err != nil {
		return nil, fmt.Errorf("converting CompositePodGroup %s: %w", cpg.Name, err)
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetGroupVersionKind(gvk)
	return u, nil
}

// markPerJob marks the Jobs of ReplicatedJob rj for the podgroups Job webhook, which names each
// Job's own PodGroup in its pod template.
func markPerJob(rj *jobsetv1alpha2.ReplicatedJob) {
	rj.Template.Annotations = with(rj.Template.Annotations, contract.PerJobPodGroupAnnotationKey, contract.EnabledValue)
}

// compositeBuilder is the workloadbuilder of composite gang g: a composite item named stage-<i>
// whose gang policy asks all of its Jobs (minGroupCount), with one leaf item per
// ReplicatedJob, named as it, whose gang policy asks all of one Job's pods, held to one domain
// of the topology key (if any), with the gang's priority class.
func compositeBuilder(js *jobsetv1alpha2.JobSet, g podgroups.Gang, topologyKey, priorityClass string) (*workloadbuilder.Builder, string, error) {
	return workloadOf(js, g, func(template string) *workloadbuilder.WorkloadItem {
		root := gangItem(template, contract.JobSetAnnotationPath(contract.CompositeAnnotationKey), max(int32(len(g.Jobs)), 1), priorityClass, "")
		for _, rjName := range g.Stage.ReplicatedJobs {
			rj := jobsets.ReplicatedJob(js, rjName)
			root.Children = append(root.Children,
				gangItem(rjName, field.NewPath("spec", "replicatedJobs").Key(rjName), max(podgroups.PodsPerJob(rj), 1), priorityClass, topologyKey))
		}
		return root
	})
}

// BuildComposite is composite gang g's CompositePodGroup, of the gang's name, made by
// workloadbuilder from its template, with our labels, the hash of its spec and the JobSet as
// controller owner. Its spec cannot change (every field is immutable).
func (Kubernetes) BuildComposite(js *jobsetv1alpha2.JobSet, g podgroups.Gang, s podgroups.Settings, priorityClass string) (*schedulingv1alpha3.CompositePodGroup, error) {
	b, template, err := compositeBuilder(js, g, s.TopologyKey, priorityClass)
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
	return stamp(cpg, js, &g, cpg.Spec), nil
}

// jobPodGroupSpec is the spec of the PodGroup of one Job of a composite gang (g, with Parent):
// its ReplicatedJob's PodGroup template in the parent's CompositePodGroup template,
// workloadRef to it, the parent as parentCompositePodGroupName, and the Job's claims.
func jobPodGroupSpec(js *jobsetv1alpha2.JobSet, g podgroups.Gang, topologyKey, priorityClass string) (schedulingv1beta1.PodGroupSpec, error) {
	b, _, err := compositeBuilder(js, *g.Parent, topologyKey, priorityClass)
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
	spec.ResourceClaims, err = claimsOf(js, g)
	return spec, err
}
