package backend

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/pkg/addon/checks/podgroups"
	"github.com/jobset-addons/jobset-addons/pkg/addon/jobsets"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// Kubernetes gangs pods with kube-scheduler alone, through Kubernetes' own Workload and PodGroup
// (scheduling.k8s.io/v1beta1), built and validated by component-helpers' workloadbuilder, as
// the Job controller builds its own (workload.go). One Workload per JobSet holds one PodGroup
// template per gang, all from the start (the API lets no template be added or removed later);
// each gang's PodGroup is made from its template when the gang may run, and its pods name it
// in spec.schedulingGroup.podGroupName. A composite gang is composite.go's.
type Kubernetes struct {
	// SchedulingGroupGang is where its pods name their gang.
	podgroups.SchedulingGroupGang
}

var (
	_ Backend    = Kubernetes{}
	_ Workloads  = Kubernetes{}
	_ Composites = Kubernetes{}
	_ Restorer   = Kubernetes{}
)

// MaxGangs is how many gangs (stages) a JobSet gang-scheduled by Kubernetes may have
// (podgroups.MaxGangs).
const MaxGangs = podgroups.MaxGangs

func (Kubernetes) Kind() schema.GroupVersionKind {
	return schedulingv1beta1.SchemeGroupVersion.WithKind("PodGroup")
}

func (Kubernetes) WorkloadKind() schema.GroupVersionKind {
	return schedulingv1beta1.SchemeGroupVersion.WithKind("Workload")
}

func (Kubernetes) NotServed() string {
	return "this cluster's apiserver did not serve the Workload API (Workload and PodGroup of scheduling.k8s.io/v1beta1) when the podgroups controller started: " +
		"it needs Kubernetes 1.37 with the feature gate GenericWorkload on kube-apiserver, kube-scheduler and kube-controller-manager and --runtime-config=scheduling.k8s.io/v1beta1=true on kube-apiserver; " +
		"turn them on and restart the controller, or pick another scheduler"
}

// SchedulerName is "": pods keep theirs, kube-scheduler serving whichever profile names it is
// configured with.
func (Kubernetes) SchedulerName() string { return "" }

// Inject sets spec.schedulingGroup.podGroupName; in a composite gang, the podgroups Job webhook
// names each Job's own PodGroup in its place (a pod that somehow kept the gang's name waits: no
// PodGroup has it).
func (Kubernetes) Inject(rj *jobsetv1alpha2.ReplicatedJob, g podgroups.Gang, _ podgroups.Settings) {
	rj.Template.Spec.Template.Spec.SchedulingGroup = &corev1.PodSchedulingGroup{PodGroupName: ptr.To(g.Name)}
	if len(g.Jobs) > 0 {
		markPerJob(rj)
	}
}

// Validate refuses what a composite gang cannot be made of, and more gangs than a Workload
// holds templates (podgroups.KubernetesLimits).
func (Kubernetes) Validate(js *jobsetv1alpha2.JobSet, s podgroups.Settings, gangs []podgroups.Gang) field.ErrorList {
	return podgroups.KubernetesLimits(js, s, gangs)
}

// Restore puts back, in each pod template of newJS, the spec.schedulingGroup that the same
// ReplicatedJob's template of oldJS has and newJS lost, and returns the names of those
// ReplicatedJobs. An update made by a client built on a Kubernetes API without that pod field
// (1.37's) drops it, because a JobSet is a custom resource: a JSON merge patch or an update
// rewrites spec.replicatedJobs whole. Kueue v0.17.0 (k8s.io/api v0.35) does so when it admits
// or evicts a JobSet, and JobSet's webhook then refuses the change of the pod template, so the
// JobSet would stay suspended. Only a template whose schedulingGroup is gone is touched.
func (Kubernetes) Restore(oldJS, newJS *jobsetv1alpha2.JobSet) []string {
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

func (Kubernetes) NewPodGroup() client.Object { return &schedulingv1beta1.PodGroup{} }

// Build: the PodGroup of gang g made by workloadbuilder from the gang's template (podGroupSpec).
func (Kubernetes) Build(js *jobsetv1alpha2.JobSet, g podgroups.Gang, s podgroups.Settings, priorityClass, _ string) client.Object {
	spec := podGroupSpec(js, g, s.TopologyKey, priorityClass)
	return stamp(&schedulingv1beta1.PodGroup{Spec: spec}, js, &g, spec)
}

// Adopt copies the gang minCount, the one field of a PodGroup's spec the API lets change
// (priorityClassName is immutable, and the apiserver's priority admission wrote priority
// beside it).
func (Kubernetes) Adopt(have, want client.Object) {
	AdoptMeta(have, want)
	h, w := have.(*schedulingv1beta1.PodGroup), want.(*schedulingv1beta1.PodGroup)
	if h.Spec.SchedulingPolicy.Gang != nil && w.Spec.SchedulingPolicy.Gang != nil {
		h.Spec.SchedulingPolicy.Gang.MinCount = w.Spec.SchedulingPolicy.Gang.MinCount
	}
}

// NeedsReplace tells whether the claims differ: the API does not let a PodGroup's claims
// change (a JobSet's restart names new claims, contract.ResourceClaimName).
func (Kubernetes) NeedsReplace(have, want client.Object) bool {
	return !equality.Semantic.DeepEqual(have.(*schedulingv1beta1.PodGroup).Spec.ResourceClaims, want.(*schedulingv1beta1.PodGroup).Spec.ResourceClaims)
}

// Dropped: an apiserver without the feature gate TopologyAwareWorkloadScheduling drops
// schedulingConstraints, and one without DRAWorkloadResourceClaims resourceClaims, from a
// PodGroup as it is created.
func (Kubernetes) Dropped(s podgroups.Settings, g podgroups.Gang, got client.Object) Dropped {
	spec := got.(*schedulingv1beta1.PodGroup).Spec
	var d Dropped
	if s.TopologyKey != "" && spec.SchedulingConstraints == nil {
		d.Topology = fmt.Sprintf("The apiserver dropped the topology constraint (%s %s) from PodGroup %s: it needs the feature gate TopologyAwareWorkloadScheduling, "+
			"and kube-scheduler too; the gang is scheduled without it", contract.TopologyKeyAnnotationKey, s.TopologyKey, got.GetName())
	}
	if len(g.Claims) > 0 && len(spec.ResourceClaims) == 0 {
		d.Claims = fmt.Sprintf("The apiserver dropped the claims %v of Job %s from PodGroup %s: it needs the feature gate DRAWorkloadResourceClaims, and kube-scheduler and "+
			"kube-controller-manager too; each claim is reserved for each pod instead, at most %d pods", g.Claims, g.ClaimsJob(got.GetLabels()[contract.JobSetNameLabelKey]), got.GetName(), jobsets.MaxClaimSharers)
	}
	return d
}

// Demand: a gang minCount, and no minResources (kube-scheduler sums the pods itself).
func (Kubernetes) Demand(g podgroups.Gang) string {
	return fmt.Sprintf("gang minCount %d", g.MinMember)
}
