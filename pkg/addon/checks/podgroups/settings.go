// Package podgroups reads a JobSet that asks for gang scheduling (contract.SchedulerAnnotationKey)
// and says what its gangs are: one per stage of contract.Stages, each with the pods it must
// place together and the resources they request. The podgroups webhooks inject and validate
// from it, and its controller builds PodGroups from it, so that the three agree. It holds the
// checks of the JobSet webhooks that need no cluster too (ValidateCreate, Warnings: the
// settings, the gangs, what each scheduler's objects cannot hold; ForeignGangs), which kubectl
// jobset-addons lint runs offline. What each scheduler makes of a gang is the controller's backend package's.
package podgroups

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// Settings are a JobSet's podgroups annotations, parsed.
type Settings struct {
	Scheduler contract.Scheduler
	// Queue is the Volcano or KAI queue; empty leaves the default queue of the backend.
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

// Errors are what is wrong with a JobSet's podgroups settings (Parse) and with its gangs
// (Gangs), apart: the webhook answers all of them at once, and the reconciler tells the first
// before it looks for the backend.
type Errors struct {
	Settings, Gangs field.ErrorList
}

// All are both, the settings' first.
func (e Errors) All() field.ErrorList {
	return append(append(field.ErrorList{}, e.Settings...), e.Gangs...)
}

// Read is what podgroups reads of a JobSet, once: its settings (Parse) and, unless its scheduler
// is unknown, its gangs (Gangs of those settings, even when some other setting is wrong, so
// that every problem is told at once).
func Read(js *jobsetv1alpha2.JobSet) (Settings, []Gang, Errors) {
	s, errs := Parse(js)
	if s.Scheduler == "" {
		return s, nil, Errors{Settings: errs}
	}
	gangs, gerrs := Gangs(js, s)
	return s, gangs, Errors{Settings: errs, Gangs: gerrs}
}

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
			fmt.Sprintf("is required by the other %s annotations: %q, %q, %q or %q", "podgroups.jobset-addons.io", contract.SchedulerVolcano, contract.SchedulerCoscheduling, contract.SchedulerKubernetes, contract.SchedulerKAI))}
	}
	s.Scheduler, errs = contract.ParseScheduler(value, path(contract.SchedulerAnnotationKey))
	onlyFor := func(key string, backends ...contract.Scheduler) bool {
		if s.Scheduler != "" && !slices.Contains(backends, s.Scheduler) {
			msg := fmt.Sprintf("applies only to scheduler %s, not %q", quoted(backends), s.Scheduler)
			if key == contract.NetworkTopologyAnnotationKey && s.Scheduler == contract.SchedulerKubernetes {
				msg += fmt.Sprintf(": Volcano's tiers do not map to the Workload API; name a node label with %s instead", contract.TopologyKeyAnnotationKey)
			}
			errs = append(errs, field.Forbidden(path(key), msg))
			return false
		}
		return true
	}
	if q, ok := a[contract.VolcanoQueueNameAnnotationKey]; ok && onlyFor(contract.VolcanoQueueNameAnnotationKey, contract.SchedulerVolcano, contract.SchedulerKAI) {
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

// claimsOnPodGroups tells whether the scheduler's PodGroups can list a Job's claims (the
// Workload API's PodGroup, spec.resourceClaims): only then do gangs carry Claims.
func (s Settings) claimsOnPodGroups() bool { return s.Scheduler == contract.SchedulerKubernetes }

// quoted is "a" for one scheduler, "a" or "b" for two.
func quoted(ss []contract.Scheduler) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = strconv.Quote(string(s))
	}
	return strings.Join(q, " or ")
}
