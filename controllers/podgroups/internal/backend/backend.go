// Package backend holds the gang schedulers podgroups drives, one file each, behind one
// interface: what the webhooks write into a JobSet's pod templates for a gang, and what the
// reconciler makes of it (the PodGroup, and for kube-scheduler the Workload and the
// CompositePodGroups). Generic code asks a Backend, or one of the optional interfaces below,
// and never which scheduler it is.
package backend

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	schedulingv1alpha3 "k8s.io/api/scheduling/v1alpha3"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	coschedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"
	volcanov1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/jobset-addons/jobset-addons/controllers/podgroups/internal/backend/kaiapi"
	"github.com/jobset-addons/jobset-addons/pkg/addon/checks/podgroups"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// Backend is one gang scheduler.
type Backend interface {
	// Scheduler is the value of contract.SchedulerAnnotationKey that asks for it.
	Scheduler() contract.Scheduler
	// Kind is its PodGroup's kind.
	Kind() schema.GroupVersionKind
	// NotServed says, for a refusal, what to do when its kinds were not served at start.
	NotServed() string

	// SchedulerName is the schedulerName its pods get where they have none, and the only one
	// they may name; "" leaves theirs and accepts any.
	SchedulerName() string
	// Inject names gang g in the templates of ReplicatedJob rj (idempotent).
	Inject(rj *jobsetv1alpha2.ReplicatedJob, g podgroups.Gang, s podgroups.Settings)
	// GangOf is the gang a pod template names for this scheduler, and whether it names one.
	GangOf(pt *corev1.PodTemplateSpec) (string, bool)
	// GangPath is where GangOf reads, below the pod template at template.
	GangPath(template *field.Path) *field.Path
	// Validate refuses gangs its objects cannot hold (with JobSet paths).
	Validate(js *jobsetv1alpha2.JobSet, s podgroups.Settings, gangs []podgroups.Gang) field.ErrorList

	// NewPodGroup is an empty PodGroup of Kind.
	NewPodGroup() client.Object
	// Build is gang g's PodGroup: its spec, our labels, the hash of both, and the JobSet as
	// controller owner.
	Build(js *jobsetv1alpha2.JobSet, g podgroups.Gang, s podgroups.Settings, priorityClass, defaultQueue string) client.Object
	// Adopt copies into have (a PodGroup of ours on the server) what of want's spec the API
	// lets change, and want's labels and hash, keeping everything else of have.
	Adopt(have, want client.Object)
	// NeedsReplace tells whether have (ours, whole) differs from want in what the API lets not
	// change: it is deleted and made again.
	NeedsReplace(have, want client.Object) bool
	// Dropped says what the apiserver dropped of gang g's PodGroup as it returned it (got).
	Dropped(s podgroups.Settings, g podgroups.Gang, got client.Object) Dropped
	// Demand is what gang g's PodGroup asks, in its own fields' words.
	Demand(g podgroups.Gang) string
}

// Dropped is what a PodGroup lost on its way through the apiserver (a CRD that does not know a
// field prunes it; an apiserver without a feature gate drops it): for each field, the message
// of the Warning that tells so, or "" when the field was kept.
type Dropped struct {
	// Topology is the network topology or topology constraint the settings asked for.
	Topology string
	// Claims are the gang's per-Job claims.
	Claims string
}

// Workloads is a Backend whose PodGroups are made from the templates of one Workload per
// JobSet (scheduling.k8s.io): the reconciler makes it before them, and deletes it after them
// once the JobSet finished.
type Workloads interface {
	WorkloadKind() schema.GroupVersionKind
	// BuildWorkload is the JobSet's Workload, a template per gang, each with its priority class.
	BuildWorkload(js *jobsetv1alpha2.JobSet, gangs []podgroups.Gang, s podgroups.Settings, priorityClass func(podgroups.Gang) string) (*schedulingv1beta1.Workload, error)
	// AdoptWorkload is Adopt for it.
	AdoptWorkload(have, want *schedulingv1beta1.Workload)
}

// Composites is a Backend that makes a composite gang (podgroups.Gang.Jobs) a CompositePodGroup,
// made before the PodGroups of its Jobs, which name it as their parent.
type Composites interface {
	BuildComposite(js *jobsetv1alpha2.JobSet, g podgroups.Gang, s podgroups.Settings, priorityClass string) (*schedulingv1alpha3.CompositePodGroup, error)
}

// Restorer is a Backend whose pod-template field a client may drop on update: Restore puts
// back in newJS what oldJS had, and names the ReplicatedJobs it restored.
type Restorer interface {
	Restore(oldJS, newJS *jobsetv1alpha2.JobSet) []string
}

// Warner is a Backend that knows of JobSets it gangs and cannot schedule well, though they are
// valid: Warnings are the admission Warnings for such a JobSet's gangs.
type Warner interface {
	Warnings(js *jobsetv1alpha2.JobSet, gangs []podgroups.Gang) []string
}

// Prerequisites is a Backend whose PodGroups need objects it does not make and its scheduler
// does not tell the lack of: Missing reads them with r and says, for PodGroup pg as built,
// what is missing (reason and message of a Warning), "" when nothing.
type Prerequisites interface {
	Missing(ctx context.Context, r client.Reader, pg client.Object) (reason, message string, err error)
}

// Names are the schedulerName each second scheduler's pods get, and KAI's default queue: chart
// values, flags of the binary.
type Names struct {
	Volcano, Coscheduling, KAI string
	// KAIDefaultQueue is the KAI queue of a JobSet that names none.
	KAIDefaultQueue string
}

// all are the backends, in a fixed order.
func all(n Names) []Backend {
	return []Backend{
		Coscheduling{secondScheduler{KeyGang: podgroups.CoschedulingGang, kind: coschedv1alpha1.SchemeGroupVersion.WithKind("PodGroup"), name: n.Coscheduling}},
		Volcano{secondScheduler{KeyGang: podgroups.VolcanoGang, kind: volcanov1beta1.SchemeGroupVersion.WithKind("PodGroup"), name: n.Volcano}},
		Kubernetes{},
		KAI{secondScheduler: secondScheduler{KeyGang: podgroups.KAIGang, kind: kaiapi.SchemeGroupVersion.WithKind("PodGroup"), name: n.KAI}, defaultQueue: n.KAIDefaultQueue},
	}
}

// Registry is every backend, made once from the schedulers' names, and each by its scheduler:
// the one place the controller's start, its webhook and its reconciler find a scheduler's
// backend.
type Registry struct {
	all []Backend
	by  map[contract.Scheduler]Backend
}

// NewRegistry makes every backend.
func NewRegistry(n Names) *Registry {
	r := &Registry{all: all(n), by: map[contract.Scheduler]Backend{}}
	for _, b := range r.all {
		r.by[b.Scheduler()] = b
	}
	return r
}

// All are the backends, in a fixed order.
func (r *Registry) All() []Backend { return r.all }

// For is the backend of scheduler s, nil for an unknown one.
func (r *Registry) For(s contract.Scheduler) Backend { return r.by[s] }

// Kinds are the kinds b writes: its Workload, if it has one, and its PodGroup.
func Kinds(b Backend) []schema.GroupVersionKind {
	if w, ok := b.(Workloads); ok {
		return []schema.GroupVersionKind{w.WorkloadKind(), b.Kind()}
	}
	return []schema.GroupVersionKind{b.Kind()}
}
