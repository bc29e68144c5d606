package controller

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"maps"

	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	coschedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"
	volcanov1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/jobset-addons/jobset-addons/controllers/podgroups/internal/gang"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// Backend is one gang scheduler's PodGroup kind: how to build and read it.
type Backend struct {
	Scheduler contract.Scheduler
	// GroupVersionKind of its PodGroup.
	GroupVersionKind schema.GroupVersionKind
	// Workload, when set, is the kind of the one object the backend makes per JobSet, before
	// its PodGroups, which they refer to (the kubernetes backend's Workload). Its apiserver must
	// serve it too. buildWorkload, newWorkload and adoptWorkload are then set.
	Workload *schema.GroupVersionKind
	// buildWorkload builds it for every gang of the JobSet, each with its priority class.
	buildWorkload func(js *jobsetv1alpha2.JobSet, gangs []gang.Gang, s gang.Settings, priorityClass func(gang.Gang) string) (client.Object, error)
	// newWorkload is an empty one.
	newWorkload func() client.Object
	// adoptWorkload is adopt for it.
	adoptWorkload func(have, want client.Object)
	// New is an empty PodGroup.
	New func() client.Object
	// spec builds the PodGroup spec of a gang.
	spec func(js *jobsetv1alpha2.JobSet, g gang.Gang, s gang.Settings, priorityClass, defaultQueue string) any
	// setSpec copies a spec built by spec into a PodGroup.
	setSpec func(client.Object, any)
	// adopt copies into a PodGroup of ours on the server (have) what want, built by Build, says
	// and the API lets change, keeping the rest of have.
	adopt func(have, want client.Object)
	// droppedTopology says, when a PodGroup, as the apiserver returned it, lost the topology
	// the settings asked for (a CRD that does not know the field prunes it; an apiserver without
	// the feature gate drops it), why: the Warning's message. "" when nothing was dropped.
	droppedTopology func(gang.Settings, client.Object) string
	// droppedClaims is the same for the gang's claims (kubernetes only; nil otherwise).
	droppedClaims func(gang.Gang, client.Object) string
	// claimsChanged, when set, tells whether a PodGroup of ours on the server (have, whole)
	// lists other claims than want: the API lets them not change, so it is made again.
	claimsChanged func(have, want client.Object) bool
}

// Backends are the three gang schedulers podgroups drives.
var Backends = map[contract.Scheduler]*Backend{
	contract.SchedulerVolcano: {
		Scheduler:        contract.SchedulerVolcano,
		GroupVersionKind: volcanov1beta1.SchemeGroupVersion.WithKind("PodGroup"),
		New:              func() client.Object { return &volcanov1beta1.PodGroup{} },
		spec: func(_ *jobsetv1alpha2.JobSet, g gang.Gang, s gang.Settings, priorityClass, defaultQueue string) any {
			spec := volcanov1beta1.PodGroupSpec{
				MinMember:         g.MinMember,
				Queue:             s.Queue,
				PriorityClassName: priorityClass,
				MinResources:      ptr.To(g.MinResources),
			}
			if spec.Queue == "" {
				spec.Queue = defaultQueue
			}
			if nt := s.NetworkTopology; nt != nil {
				spec.NetworkTopology = &volcanov1beta1.NetworkTopologySpec{
					Mode:               volcanov1beta1.NetworkTopologyMode(nt.Mode),
					HighestTierAllowed: nt.HighestTierAllowed,
				}
			}
			return spec
		},
		setSpec: func(o client.Object, spec any) {
			o.(*volcanov1beta1.PodGroup).Spec = spec.(volcanov1beta1.PodGroupSpec)
		},
		adopt: func(have, want client.Object) {
			adoptMeta(have, want)
			have.(*volcanov1beta1.PodGroup).Spec = want.(*volcanov1beta1.PodGroup).Spec
		},
		droppedTopology: func(s gang.Settings, o client.Object) string {
			if s.NetworkTopology == nil || o.(*volcanov1beta1.PodGroup).Spec.NetworkTopology != nil {
				return ""
			}
			return fmt.Sprintf("The Volcano PodGroup CRD installed has no spec.networkTopology and dropped it from PodGroup %s: upgrade Volcano's CRDs for network-topology-aware scheduling", o.GetName())
		},
	},
	contract.SchedulerCoscheduling: {
		Scheduler:        contract.SchedulerCoscheduling,
		GroupVersionKind: coschedv1alpha1.SchemeGroupVersion.WithKind("PodGroup"),
		New:              func() client.Object { return &coschedv1alpha1.PodGroup{} },
		spec: func(_ *jobsetv1alpha2.JobSet, g gang.Gang, s gang.Settings, _, _ string) any {
			return coschedv1alpha1.PodGroupSpec{
				MinMember:              g.MinMember,
				MinResources:           g.MinResources,
				ScheduleTimeoutSeconds: s.ScheduleTimeoutSeconds,
			}
		},
		setSpec: func(o client.Object, spec any) {
			o.(*coschedv1alpha1.PodGroup).Spec = spec.(coschedv1alpha1.PodGroupSpec)
		},
		adopt: func(have, want client.Object) {
			adoptMeta(have, want)
			have.(*coschedv1alpha1.PodGroup).Spec = want.(*coschedv1alpha1.PodGroup).Spec
		},
		droppedTopology: func(gang.Settings, client.Object) string { return "" },
	},
	contract.SchedulerKubernetes: {
		Scheduler:        contract.SchedulerKubernetes,
		GroupVersionKind: schedulingv1beta1.SchemeGroupVersion.WithKind("PodGroup"),
		Workload:         ptr.To(schedulingv1beta1.SchemeGroupVersion.WithKind("Workload")),
		buildWorkload: func(js *jobsetv1alpha2.JobSet, gangs []gang.Gang, s gang.Settings, priorityClass func(gang.Gang) string) (client.Object, error) {
			return NativeWorkload(js, gangs, s.TopologyKey, priorityClass)
		},
		newWorkload:   func() client.Object { return &schedulingv1beta1.Workload{} },
		adoptWorkload: adoptNativeWorkload,
		New:           func() client.Object { return &schedulingv1beta1.PodGroup{} },
		spec: func(js *jobsetv1alpha2.JobSet, g gang.Gang, s gang.Settings, priorityClass, _ string) any {
			return nativePodGroupSpec(js, g, s.TopologyKey, priorityClass)
		},
		setSpec: func(o client.Object, spec any) {
			o.(*schedulingv1beta1.PodGroup).Spec = spec.(schedulingv1beta1.PodGroupSpec)
		},
		adopt:           adoptNativePodGroup,
		droppedTopology: nativeDroppedTopology,
		droppedClaims:   nativeDroppedClaims,
		claimsChanged:   nativeClaimsChanged,
	},
}

// Kinds are the kinds the backend writes: its PodGroup, and its Workload if it has one.
func (b *Backend) Kinds() []schema.GroupVersionKind {
	if b.Workload != nil {
		return []schema.GroupVersionKind{*b.Workload, b.GroupVersionKind}
	}
	return []schema.GroupVersionKind{b.GroupVersionKind}
}

// Meta is an empty PodGroup's metadata, the form in which the cache holds ours: the reconciler
// reads only their names, labels, spec hash and owners, and decoding whole PodGroups (with the
// scheduler's status) on every watch event costs the controller and the API server CPU.
func (b *Backend) Meta() *metav1.PartialObjectMetadata { return meta(b.GroupVersionKind) }

// MetaList is an empty list of PodGroups' metadata.
func (b *Backend) MetaList() *metav1.PartialObjectMetadataList {
	l := &metav1.PartialObjectMetadataList{}
	l.SetGroupVersionKind(b.GroupVersionKind.GroupVersion().WithKind(b.GroupVersionKind.Kind + "List"))
	return l
}

// MetaKinds are empty metadata of every kind the backend writes, as the cache holds them.
func (b *Backend) MetaKinds() []client.Object {
	var objs []client.Object
	for _, gvk := range b.Kinds() {
		objs = append(objs, meta(gvk))
	}
	return objs
}

func meta(gvk schema.GroupVersionKind) *metav1.PartialObjectMetadata {
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(gvk)
	return m
}

// Build is the PodGroup of a gang: its spec, the add-on's labels, the hash of both, and the
// JobSet as controller owner.
func (b *Backend) Build(js *jobsetv1alpha2.JobSet, g gang.Gang, s gang.Settings, priorityClass, defaultQueue string) client.Object {
	spec := b.spec(js, g, s, priorityClass, defaultQueue)
	labels := ourLabels(js, &g)
	pg := b.New()
	pg.SetName(g.Name)
	pg.SetNamespace(js.Namespace)
	pg.SetLabels(labels)
	pg.SetAnnotations(map[string]string{contract.PodGroupSpecHashAnnotationKey: hash(spec, labels)})
	pg.SetOwnerReferences([]metav1.OwnerReference{*metav1.NewControllerRef(js, jobsetv1alpha2.GroupVersion.WithKind("JobSet"))})
	b.setSpec(pg, spec)
	return pg
}

// ourLabels are the labels of what podgroups makes for the JobSet: managed-by, the JobSet's
// name, and, on a sequenced JobSet's PodGroup, the stage.
func ourLabels(js *jobsetv1alpha2.JobSet, g *gang.Gang) map[string]string {
	labels := map[string]string{
		contract.ManagedByLabelKey:  contract.PodGroupsManagedByValue,
		contract.JobSetNameLabelKey: js.Name,
	}
	if g != nil && g.Sequenced {
		labels[contract.PodGroupStageLabelKey] = gang.StageLabel(g.Stage.Index)
	}
	return labels
}

// Adopt copies into have (a PodGroup of ours on the server) the spec (what of it may change),
// labels and hash of want, keeping everything else of have (status, others' labels and
// annotations).
func (b *Backend) Adopt(have, want client.Object) { b.adopt(have, want) }

// adoptMeta copies want's labels and annotations into have, keeping have's others.
func adoptMeta(have, want client.Object) {
	labels := maps.Clone(have.GetLabels())
	if labels == nil {
		labels = map[string]string{}
	}
	maps.Copy(labels, want.GetLabels())
	have.SetLabels(labels)
	ann := maps.Clone(have.GetAnnotations())
	if ann == nil {
		ann = map[string]string{}
	}
	maps.Copy(ann, want.GetAnnotations())
	have.SetAnnotations(ann)
}

// Ours tells whether a PodGroup on the server is one podgroups made for this JobSet: our
// managed-by label and the JobSet as controller.
func Ours(pg client.Object, js *jobsetv1alpha2.JobSet) bool {
	if pg.GetLabels()[contract.ManagedByLabelKey] != contract.PodGroupsManagedByValue {
		return false
	}
	ref := metav1.GetControllerOfNoCopy(pg)
	return ref != nil && ref.UID == js.UID
}

func hash(spec any, labels map[string]string) string {
	b, err := json.Marshal(struct {
		Spec   any               `json:"spec"`
		Labels map[string]string `json:"labels"`
	}{spec, labels})
	if err != nil {
		panic(fmt.Sprintf("hashing a PodGroup spec: %v", err))
	}
	h := fnv.New64a()
	_, _ = h.Write(b)
	return fmt.Sprintf("%016x", h.Sum64())
}
