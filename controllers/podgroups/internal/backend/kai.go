package backend

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/controllers/podgroups/internal/backend/kaiapi"
	"github.com/jobset-addons/jobset-addons/pkg/addon/checks/podgroups"
	"github.com/jobset-addons/jobset-addons/pkg/addon/jobsets"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// KAI gangs pods through a KAI Scheduler PodGroup (scheduling.run.ai/v2alpha2), which pods name
// in their pod-group-name annotation: minMember, queue, priority class, and a subGroup per
// ReplicatedJob with its own minMember (the pods' kai.scheduler/subgroup-name label), so that
// the gang is all of each ReplicatedJob, not any minMember of its pods. Its names carry the
// namespace (contract.KAIPodGroupName): KAI finds a PodGroup's pods by name alone.
type KAI struct {
	secondScheduler
	// defaultQueue is the queue of a JobSet that names none.
	defaultQueue string
}

// queue is the settings' queue, or the default.
func (k KAI) queue(s podgroups.Settings) string {
	if s.Queue != "" {
		return s.Queue
	}
	return k.defaultQueue
}

// Inject sets the pod-group-name annotation, the ReplicatedJob's subGroup label and the queue
// label (KAI's pod grouper, where it runs, reads it).
func (k KAI) Inject(rj *jobsetv1alpha2.ReplicatedJob, g podgroups.Gang, s podgroups.Settings) {
	k.secondScheduler.Inject(rj, g, s)
	pt := &rj.Template.Spec.Template
	pt.Labels = with(pt.Labels, contract.KAISubGroupLabelKey, rj.Name)
	if q := k.queue(s); q != "" {
		pt.Labels = with(pt.Labels, contract.KAIQueueLabelKey, q)
	}
}

func (KAI) Validate(*jobsetv1alpha2.JobSet, podgroups.Settings, []podgroups.Gang) field.ErrorList {
	return nil
}

func (KAI) NewPodGroup() client.Object { return &kaiapi.PodGroup{} }

// Build: the queue is the settings' or else the backend's default (defaultQueue, Volcano's, is
// not KAI's); one subGroup per ReplicatedJob of the gang, of all its pods that run at once.
func (k KAI) Build(js *jobsetv1alpha2.JobSet, g podgroups.Gang, s podgroups.Settings, priorityClass, _ string) client.Object {
	spec := kaiapi.PodGroupSpec{
		MinMember:         g.MinMember,
		Queue:             k.queue(s),
		PriorityClassName: priorityClass,
		SubGroups:         subGroups(js, g),
	}
	return stamp(&kaiapi.PodGroup{Spec: spec}, js, &g, spec)
}

// subGroups are gang g's ReplicatedJobs, each of replicas × its Jobs' pods that run at once.
func subGroups(js *jobsetv1alpha2.JobSet, g podgroups.Gang) []kaiapi.SubGroup {
	var out []kaiapi.SubGroup
	for _, name := range g.Stage.ReplicatedJobs {
		rj := jobsets.ReplicatedJob(js, name)
		if rj == nil {
			continue
		}
		out = append(out, kaiapi.SubGroup{Name: name, MinMember: rj.Replicas * podgroups.PodsPerJob(rj)})
	}
	return out
}

// Adopt: every field podgroups sets may change.
func (KAI) Adopt(have, want client.Object) {
	AdoptMeta(have, want)
	have.(*kaiapi.PodGroup).Spec = want.(*kaiapi.PodGroup).Spec
}

func (KAI) Dropped(podgroups.Settings, podgroups.Gang, client.Object) Dropped { return Dropped{} }

func (KAI) Demand(g podgroups.Gang) string {
	return fmt.Sprintf("minMember %d, a subGroup per ReplicatedJob (%s)", g.MinMember, strings.Join(g.Stage.ReplicatedJobs, ", "))
}

// Reasons of Missing.
const (
	// ReasonQueueMissing: the KAI PodGroup's queue does not exist; KAI skips the PodGroup
	// without a word and its pods stay Pending.
	ReasonQueueMissing = "QueueMissing"
	// ReasonQueueNotLeaf: the queue has no parentQueue; KAI schedules only to queues that have
	// one.
	ReasonQueueNotLeaf = "QueueNotLeaf"
)

// Missing: the PodGroup's Queue, which KAI needs and does not tell the lack of, nor of its
// parentQueue. An error other than NotFound (the Queue kind not served, no right to read it) is
// returned, to be logged.
func (KAI) Missing(ctx context.Context, r client.Reader, pg client.Object) (reason, message string, err error) {
	queue := pg.(*kaiapi.PodGroup).Spec.Queue
	q := &unstructured.Unstructured{}
	q.SetGroupVersionKind(kaiapi.QueueKind)
	switch err := r.Get(ctx, client.ObjectKey{Name: queue}, q); {
	case apierrors.IsNotFound(err):
		return ReasonQueueMissing, fmt.Sprintf("KAI Queue %q does not exist: KAI Scheduler skips PodGroup %s without an Event and its pods stay Pending; "+
			"create the Queue (with a parentQueue), or name an existing one with the JobSet annotation %s", queue, pg.GetName(), contract.VolcanoQueueNameAnnotationKey), nil
	case err != nil:
		return "", "", fmt.Errorf("reading KAI Queue %q: %w", queue, err)
	}
	if parent, _, _ := unstructured.NestedString(q.Object, "spec", "parentQueue"); parent == "" {
		return ReasonQueueNotLeaf, fmt.Sprintf("KAI Queue %q has no parentQueue: KAI Scheduler schedules only PodGroups of queues that have one, and skips PodGroup %s without an Event; "+
			"name a queue under a parent queue with the JobSet annotation %s", queue, pg.GetName(), contract.VolcanoQueueNameAnnotationKey), nil
	}
	return "", "", nil
}
