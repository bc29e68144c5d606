package addon

import (
	"context"
	"crypto/sha256"
	"regexp"
	"strings"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// ReasonPodsRefused is the reason of the Warning an add-on emits on a JobSet whose Jobs cannot
// create their pods because the API server refuses what the add-on put in them.
const ReasonPodsRefused = "PodsRefused"

// FailedCreateReason is the reason of the Job controller's Warning Event on a Job whose pod the
// API server refused; the Job has no condition for it.
const FailedCreateReason = "FailedCreate"

// JobController is the name kube-controller-manager's Job controller writes its Events under
// (core/v1 source.component and reportingComponent).
const JobController = "job-controller"

// FailedCreateEvents scopes the Event informer to the Job controller's FailedCreate Events on
// Jobs (a field selector), each trimmed to what PodsRefused reads: an add-on that watches them
// caches those Events only. Put it in Options.Cache for &corev1.Event{}.
func FailedCreateEvents() cache.ByObject {
	return Trimmed(cache.ByObject{Field: fields.SelectorFromSet(fields.Set{
		"involvedObject.kind": "Job", "reason": FailedCreateReason, "reportingComponent": JobController,
	})}, func(obj any) {
		if e, ok := obj.(*corev1.Event); ok {
			*e = corev1.Event{
				ObjectMeta:     metav1.ObjectMeta{Name: e.Name, Namespace: e.Namespace, UID: e.UID, ResourceVersion: e.ResourceVersion},
				InvolvedObject: e.InvolvedObject, Reason: e.Reason, Message: e.Message, Type: e.Type,
				Source: corev1.EventSource{Component: e.Source.Component}, ReportingController: e.ReportingController,
			}
		}
	})
}

// fromJobController tells whether e is a Warning FailedCreate Event on a Job written as the Job
// controller writes one: its source and reporting component are the Job controller's. An Event
// anyone else wrote (a user may create Events) is not taken for one.
func fromJobController(e *corev1.Event) bool {
	return e.Type == corev1.EventTypeWarning && e.Reason == FailedCreateReason && e.InvolvedObject.Kind == "Job" &&
		e.InvolvedObject.APIVersion == "batch/v1" && e.Source.Component == JobController && e.ReportingController == JobController
}

// PodsRefused tells, on a JobSet, that its Jobs cannot create their pods because of what the
// add-on put in them: it watches the Job controller's FailedCreate Events (FailedCreateEvents;
// only those whose source and reporting component are the Job controller's, fromJobController),
// finds each one's Job and that Job's JobSet (the jobset-name label and the Job's controller
// reference), asks Concerns whether the API server's message is about the add-on's part, and if
// so emits one ReasonPodsRefused Warning on the JobSet per cause, naming the Job, the add-on's
// part and the message. The Jobs and JobSets are read from the manager's cache.
type PodsRefused struct {
	Client   client.Reader
	Recorder events.EventRecorder
	Clock    clock.PassiveClock
	// Concerns tells whether message, the API server's refusal of a pod of job, concerns what
	// the add-on put in the pods of js, and names that in the Warning ("the init container x").
	Concerns func(js *jobsetv1alpha2.JobSet, job *batchv1.Job, message string) (what string, ok bool)

	told toldRecently
}

// SetupPodsRefused runs, in mgr, a PodsRefused that reads the manager's cache and tells with the
// Event recorder of component (the add-on's, "<name>.jobset-addons.io"); concerns is its
// Concerns. The manager's cache must hold the FailedCreate Events (FailedCreateEvents) and the
// JobSets' Jobs.
func SetupPodsRefused(mgr ctrl.Manager, component string, concerns func(js *jobsetv1alpha2.JobSet, job *batchv1.Job, message string) (string, bool)) error {
	r := &PodsRefused{Client: mgr.GetClient(), Recorder: EventRecorder(mgr, component), Concerns: concerns}
	return r.SetupWithManager(mgr)
}

// SetupWithManager watches the FailedCreate Events of the manager's cache.
func (r *PodsRefused) SetupWithManager(mgr ctrl.Manager) error {
	failedCreate := predicate.NewPredicateFuncs(func(obj client.Object) bool {
		e, ok := obj.(*corev1.Event)
		return ok && fromJobController(e)
	})
	return ctrl.NewControllerManagedBy(mgr).Named("podsrefused").
		For(&corev1.Event{}, builder.WithPredicates(failedCreate, predicate.Funcs{DeleteFunc: func(event.DeleteEvent) bool { return false }})).
		Complete(r)
}

// Reconcile tells the refusal the Event reports, once per JobSet and cause.
func (r *PodsRefused) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var e corev1.Event
	if err := r.Client.Get(ctx, req.NamespacedName, &e); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !fromJobController(&e) {
		return reconcile.Result{}, nil
	}
	job, js, err := r.jobAndJobSet(ctx, &e)
	if err != nil || js == nil {
		return reconcile.Result{}, err
	}
	what, ok := r.Concerns(js, job, e.Message)
	if !ok || !r.told.once(r.clock(), js.UID, refusalCause(e.Message)) {
		return reconcile.Result{}, nil
	}
	Tell(r.Recorder, js, job, corev1.EventTypeWarning, ReasonPodsRefused, "CreatePods",
		"Job %s cannot create its pods, which have %s: %s", job.Name, what, e.Message)
	return reconcile.Result{}, nil
}

// jobAndJobSet are the Job the Event is about and the JobSet that controls it; js is nil when
// there is none (a Job of no JobSet, gone, or another's of the same name), or when the JobSet is
// managed elsewhere or being deleted.
func (r *PodsRefused) jobAndJobSet(ctx context.Context, e *corev1.Event) (*batchv1.Job, *jobsetv1alpha2.JobSet, error) {
	var job batchv1.Job
	key := types.NamespacedName{Namespace: e.InvolvedObject.Namespace, Name: e.InvolvedObject.Name}
	if err := r.Client.Get(ctx, key, &job); err != nil {
		return nil, nil, client.IgnoreNotFound(err)
	}
	owner := metav1.GetControllerOf(&job)
	name := job.Labels[contract.JobSetNameLabelKey]
	if job.UID != e.InvolvedObject.UID || owner == nil || owner.Kind != "JobSet" || owner.Name != name {
		return nil, nil, nil
	}
	var js jobsetv1alpha2.JobSet
	if err := r.Client.Get(ctx, types.NamespacedName{Namespace: job.Namespace, Name: name}, &js); err != nil {
		return nil, nil, client.IgnoreNotFound(err)
	}
	if js.UID != owner.UID || js.DeletionTimestamp != nil || contract.ManagedElsewhere(js.Spec.ManagedBy) {
		return nil, nil, nil
	}
	return &job, &js, nil
}

func (r *PodsRefused) clock() clock.PassiveClock {
	if r.Clock == nil {
		return clock.RealClock{}
	}
	return r.Clock
}

// podName is the pod's name in the Job controller's message (`pods "x-abcde" is forbidden`),
// different for each attempt.
var podName = regexp.MustCompile(`pods? "[^"]*"`)

// refusalCause is the message without the pod's name, and without the prefix client-go's event
// correlator gives a message it aggregates: the same cause for every pod refused.
func refusalCause(message string) string {
	message = strings.TrimPrefix(message, "(combined from similar events): ")
	return podName.ReplaceAllString(message, `pods "NAME"`)
}

// toldRecently remembers, for toldFor, the causes told about each JobSet: at most maxTold of
// them, so that memory is bounded whatever the cluster does. A cause told again after toldFor
// (the Events it came from have expired by then) or after the memory was full is told again.
type toldRecently struct {
	mu sync.Mutex
	at map[string]time.Time
}

const (
	maxTold = 4096
	toldFor = time.Hour
)

// once tells whether cause was not told about uid within toldFor, and records it.
func (t *toldRecently) once(c clock.PassiveClock, uid types.UID, cause string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	sum := sha256.Sum256([]byte(cause))
	key := string(uid) + "\x00" + string(sum[:])
	now := c.Now()
	if at, ok := t.at[key]; ok && now.Sub(at) < toldFor {
		return false
	}
	if t.at == nil || len(t.at) >= maxTold {
		t.forgetOld(now)
	}
	t.at[key] = now
	return true
}

// forgetOld drops what was told more than toldFor ago; all of it, if that leaves it full.
func (t *toldRecently) forgetOld(now time.Time) {
	for k, at := range t.at {
		if now.Sub(at) >= toldFor {
			delete(t.at, k)
		}
	}
	if t.at == nil || len(t.at) >= maxTold {
		t.at = make(map[string]time.Time)
	}
}

// NamedIn are the words of a refusal's message that may be object names: the runs of the
// characters of a DNS subdomain (a-z, 0-9, '-', '.'), without a trailing '.' or '-' (the end of
// a sentence). An add-on's Concerns looks for the names of its objects among them, whole.
func NamedIn(message string) map[string]bool {
	words := map[string]bool{}
	for _, w := range strings.FieldsFunc(message, func(r rune) bool {
		return (r < 'a' || r > 'z') && (r < '0' || r > '9') && r != '-' && r != '.'
	}) {
		if w = strings.TrimRight(w, ".-"); w != "" {
			words[w] = true
		}
	}
	return words
}
