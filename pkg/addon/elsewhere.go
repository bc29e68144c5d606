package addon

import (
	"context"
	"fmt"
	"os"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	eventsv1client "k8s.io/client-go/kubernetes/typed/events/v1"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// ReasonManagedElsewhere is the reason of the one Normal Event on a JobSet that uses add-ons and
// whose spec.managedBy names another controller (contract.ManagedElsewhere): nothing is made
// for it in this cluster. It is stable: alerts and scripts may match on it.
const ReasonManagedElsewhere = "ManagedElsewhere"

// elsewhereTries is how often writing the Event is tried again (Events are best effort).
const elsewhereTries = 5

// elsewhereJobSet is what the Event about a JobSet managed elsewhere names.
type elsewhereJobSet struct {
	namespace, name string
	uid             types.UID
	managedBy       string
}

// elsewhere tells, once for all the add-ons, that a JobSet that uses them is managed elsewhere.
// The cache's transform hands it each such JobSet (Add); a worker of the leader writes one Event
// per JobSet, named after the JobSet's UID (ElsewhereEventName), so that the add-ons that see
// the same JobSet find it there (AlreadyExists) and the user reads one Event, not one per
// add-on, whichever add-ons are installed.
type elsewhere struct {
	queue workqueue.TypedRateLimitingInterface[elsewhereJobSet]
	told  Told
}

func newElsewhere() *elsewhere {
	return &elsewhere{queue: workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.DefaultTypedControllerRateLimiter[elsewhereJobSet](),
		workqueue.TypedRateLimitingQueueConfig[elsewhereJobSet]{Name: "managed-elsewhere"})}
}

// Add queues js, whole, once per process.
func (e *elsewhere) Add(js *jobsetv1alpha2.JobSet) {
	if e.told.Once(js.UID, ReasonManagedElsewhere) {
		e.queue.Add(elsewhereJobSet{namespace: js.Namespace, name: js.Name, uid: js.UID, managedBy: *js.Spec.ManagedBy})
	}
}

// Forget drops what was told of a deleted JobSet.
func (e *elsewhere) Forget(uid types.UID) { e.told.Forget(uid) }

// ElsewhereEventName is the name of the one Event about a JobSet of that UID managed elsewhere.
func ElsewhereEventName(uid types.UID) string { return string(uid) + ".managed-elsewhere" }

// ElsewhereNote is the note of that Event.
func ElsewhereNote(managedBy string) string {
	return fmt.Sprintf("spec.managedBy is %s, not JobSet's own controller (%s): the JobSet runs elsewhere (MultiKueue's worker cluster) or under another controller, "+
		"so no jobset-addons add-on makes, adopts or deletes anything for it in this cluster (no PersistentVolumeClaim, ResourceClaim, PodGroup, or stage release); "+
		"if spec.managedBy was set by mistake, re-create the JobSet without it (the field is immutable)", managedBy, contract.JobSetControllerManagedBy)
}

// run writes the queued Events until ctx ends, as controller (the reporting controller).
func (e *elsewhere) run(ctx context.Context, cl eventsv1client.EventsV1Interface, controller string) error {
	host, _ := os.Hostname()
	instance := controller + "-" + host
	log := ctrl.LoggerFrom(ctx)
	go func() {
		<-ctx.Done()
		e.queue.ShutDown()
	}()
	for {
		j, shutdown := e.queue.Get()
		if shutdown {
			return nil
		}
		err := tellElsewhere(ctx, cl, controller, instance, j)
		if err != nil && ctx.Err() == nil && e.queue.NumRequeues(j) < elsewhereTries {
			log.Error(err, "Telling that a JobSet is managed elsewhere", "jobset", klog.KRef(j.namespace, j.name))
			e.queue.AddRateLimited(j)
		} else {
			e.queue.Forget(j)
		}
		e.queue.Done(j)
	}
}

// tellElsewhere creates the Event about j, unless an add-on did.
func tellElsewhere(ctx context.Context, cl eventsv1client.EventsV1Interface, controller, instance string, j elsewhereJobSet) error {
	ev := &eventsv1.Event{
		ObjectMeta:          metav1.ObjectMeta{Namespace: j.namespace, Name: ElsewhereEventName(j.uid)},
		EventTime:           metav1.NowMicro(),
		ReportingController: controller,
		ReportingInstance:   instance,
		Action:              "Skip",
		Reason:              ReasonManagedElsewhere,
		Type:                corev1.EventTypeNormal,
		Regarding: corev1.ObjectReference{APIVersion: jobsetv1alpha2.GroupVersion.String(), Kind: "JobSet",
			Namespace: j.namespace, Name: j.name, UID: j.uid},
		Note: ElsewhereNote(j.managedBy),
	}
	if _, err := cl.Events(j.namespace).Create(ctx, ev, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating Event %s: %w", ev.Name, err)
	}
	return nil
}
