package addon

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	batchv1 "k8s.io/api/batch/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// ForeignHolder reads, through r (an add-on's cache of its own objects), the object of key into
// into, and names whose it is when it is another's by id (contract.Identity.Of: Foreign):
// id.Holder, and the object that controls it ("held by Job a-w-0"). It is "" when r holds no
// such object, or holds one that is id's JobSet's own, one an earlier JobSet of its name left
// for the same part, or a user's: a Job whose objects are all so may go on.
func ForeignHolder(ctx context.Context, r client.Reader, key client.ObjectKey, into client.Object, id contract.Identity) string {
	if err := r.Get(ctx, key, into); err != nil {
		return ""
	}
	return foreignHolder(into, id)
}

// foreignHolder names whose o is when it is another's by id (ForeignHolder), or "".
func foreignHolder(o client.Object, id contract.Identity) string {
	if id.Of(o) != contract.Foreign {
		return ""
	}
	holder := id.Holder(o)
	if ref := metav1.GetControllerOfNoCopy(o); ref != nil {
		holder += ", held by " + ref.Kind + " " + ref.Name
	}
	return holder
}

// MakeFirst creates want, an object a webhook's JobSet needs and that the add-on's cache does
// not show yet, so that its name is id's JobSet's before another JobSet of a colliding name
// (names are joined with "-") can make it: the create decides whose the name is, and a pod or
// Job admitted without it could otherwise start against the other JobSet's. made says want
// was created. When an object of the name exists already, it is read through c and holder
// names whose it is if it is another's (ForeignHolder), "" if it is id's JobSet's or a user's.
// err is a create (or read) that failed otherwise: the caller holds its pod or Job back until
// it can be made. It is for admission requests that are not dry runs.
func MakeFirst(ctx context.Context, c client.Client, want client.Object, id contract.Identity) (holder string, made bool, err error) {
	err = c.Create(ctx, want)
	if err == nil {
		return "", true, nil
	}
	if !apierrors.IsAlreadyExists(err) {
		return "", false, err
	}
	// A zero object of want's type (and kind, when unstructured): a read into a copy of want
	// would keep want's labels where the one of the name has none.
	have, ok := reflect.New(reflect.TypeOf(want).Elem()).Interface().(client.Object)
	if !ok {
		return "", false, fmt.Errorf("%T is not a client.Object", want)
	}
	if u, ok := want.(*unstructured.Unstructured); ok {
		have.(*unstructured.Unstructured).SetGroupVersionKind(u.GroupVersionKind())
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(want), have); err != nil {
		return "", false, err
	}
	return foreignHolder(have, id), false, nil
}

// DenyTakenJob is an add-on's Job webhook's denial of a Job some of whose objects another
// JobSet holds (errs, each a Taken message with a ForeignHolder, at the field that names the object): what
// says what the Job's pods would share ("that Job's devices"). The Job's pods never start
// against them; JobSet creates (or resumes) it again with back-off, and the add-on's reconciler
// tells the JobSet.
func DenyTakenJob(addon string, job *batchv1.Job, what string, errs field.ErrorList) admission.Response {
	return admission.Denied(fmt.Sprintf("%s: Job %s is not created or resumed while an object of a name it needs was made for another JobSet, or another Job, so that its pods never use %s (JobSet retries it): %v",
		addon, job.Name, what, errs.ToAggregate()))
}

// DecodeCreateOrResume decodes, into job, a Job of a CREATE admission request, or of the UPDATE
// that resumes it (spec.suspend from true to false: Kueue admitting its JobSet, JobSet
// resuming it), for a Job webhook that must judge a Job before its pods are made. done says
// the handler has nothing more to do and should answer resp: another operation or another
// update (allowed), or an object that does not decode (a bad request). resumed says the request
// is that UPDATE.
func DecodeCreateOrResume(req admission.Request, job *batchv1.Job) (resp admission.Response, resumed, done bool) {
	if req.Operation != admissionv1.Update {
		resp, done = DecodeCreate(req, job)
		return resp, false, done
	}
	old := &batchv1.Job{}
	if err := json.Unmarshal(req.OldObject.Raw, old); err != nil {
		return admission.Errored(http.StatusBadRequest, err), false, true
	}
	if err := json.Unmarshal(req.Object.Raw, job); err != nil {
		return admission.Errored(http.StatusBadRequest, err), false, true
	}
	if !ptr.Deref(old.Spec.Suspend, false) || ptr.Deref(job.Spec.Suspend, false) {
		return admission.Allowed(""), false, true
	}
	if job.Namespace == "" {
		job.Namespace = req.Namespace
	}
	return admission.Response{}, true, false
}

// MadeFirst tells a reconciler which of a JobSet's objects its webhook made (MakeFirst, for a
// pod or Job that came first) rather than itself, so that each object the add-on made is told
// as created (its Event, its metric) once: the reconciler marks what it makes (Made), and asks
// of each object of the JobSet's it finds whether to tell it (Tell). Objects made before
// Started (by the process before a restart, which told them) are never told again.
type MadeFirst struct {
	// Started is when the process began, to the second (creation times are); zero: nothing
	// is told.
	Started time.Time
	Told    *Told
	// Kind tells one kind's objects from another's of the same name, where one Told holds
	// several kinds.
	Kind string
}

// Made marks name, made by the reconciler for the JobSet uid (and told then).
func (m MadeFirst) Made(uid types.UID, name string) {
	if m.Told != nil {
		m.Told.Once(uid, m.key(name))
	}
}

// Tell says whether o, the JobSet uid's, was made by the webhook since the process began and
// is not told yet; it is then told from now on.
func (m MadeFirst) Tell(uid types.UID, o metav1.Object) bool {
	return m.Told != nil && !m.Started.IsZero() && !o.GetCreationTimestamp().Time.Before(m.Started) && m.Told.Once(uid, m.key(o.GetName()))
}

func (m MadeFirst) key(name string) string { return "made\x00" + m.Kind + "\x00" + name }

// ControllingJobSet is the JobSet that controls job (its controller reference, by name and
// UID), read through cached or, when the cache does not show it yet or shows an older one of
// the name, through api (nil: none); nil when there is none.
func ControllingJobSet(ctx context.Context, cached, api client.Reader, job *batchv1.Job) *jobsetv1alpha2.JobSet {
	ref := metav1.GetControllerOfNoCopy(job)
	if ref == nil || ref.Kind != "JobSet" {
		return nil
	}
	key := client.ObjectKey{Namespace: job.Namespace, Name: ref.Name}
	js := &jobsetv1alpha2.JobSet{}
	err := cached.Get(ctx, key, js)
	if (err == nil && js.UID != ref.UID) || apierrors.IsNotFound(err) {
		if api == nil {
			return nil
		}
		js = &jobsetv1alpha2.JobSet{}
		err = api.Get(ctx, key, js)
	}
	if err != nil || js.UID != ref.UID {
		return nil
	}
	return js
}
