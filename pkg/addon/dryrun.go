package addon

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// Verdict is what the answer to a create (a dry run at admission, or the real one later) says
// about the object an add-on makes for a JobSet.
type Verdict int

const (
	// Accepted: created (or, in a dry run, it would be), or one of that name exists already. Nothing
	// to tell.
	Accepted Verdict = iota
	// Refused: the API server refuses the object as it is, and will go on refusing it whatever
	// else happens in the cluster: it fails its validation (422 Invalid, the ResourceClaim or
	// PersistentVolumeClaim rules, a ValidatingAdmissionPolicy), or the request itself is bad
	// (400). At admission the JobSet is refused with the causes; later, the add-on tells it once.
	Refused
	// Unsure: the create failed for a reason that may change: a ResourceQuota or LimitRange of
	// the namespace (403), the add-on's own permissions, a namespace terminating, another
	// webhook that refused, failed or timed out, throttling (429), the API server's own errors
	// (5xx), the network. At admission that is a Warning, never a refusal (Kueue queues a
	// JobSet until its quota frees up, by design); later, the add-on retries with back-off.
	Unsure
)

func (v Verdict) String() string {
	switch v {
	case Accepted:
		return "accepted"
	case Refused:
		return "refused"
	}
	return "unsure"
}

// NamespaceTerminating tells whether err, the answer to a create, says the namespace is being
// deleted. Nothing can be made there any more, and the JobSet goes with its namespace: a
// controller makes nothing, reports no failure and does not retry, as Kubernetes' Job and
// ReplicaSet controllers do; each event of the namespace's deletion (its objects going one by
// one) would otherwise bring the same refused create again, and its retries.
func NamespaceTerminating(err error) bool {
	return apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause)
}

// Classify tells what err, the answer to a create of an object, says about that object (see
// Verdict). A create that would collide with an existing object (409 AlreadyExists) is Accepted:
// the API server validates and admits an object before it looks for its name.
func Classify(err error) Verdict {
	switch {
	case err == nil, apierrors.IsAlreadyExists(err):
		return Accepted
	case NamespaceTerminating(err):
		return Unsure
	case apierrors.IsInvalid(err), apierrors.IsBadRequest(err):
		return Refused
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) && status.Status().Code == http.StatusUnprocessableEntity {
		return Refused // a webhook's or policy's refusal answered 422 with another reason
	}
	return Unsure
}

// Causes turns the refusal err of an object made from the template at path into field errors
// under path: a cause at spec.resources[storage] of the object becomes one at
// path.spec.resources[storage], with the API server's own type and message. A refusal without
// causes is one error at path with the API server's message.
func Causes(path *field.Path, err error) field.ErrorList {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return field.ErrorList{field.Invalid(path, field.OmitValueType{}, err.Error())}
	}
	st := status.Status()
	if st.Details == nil || len(st.Details.Causes) == 0 {
		return field.ErrorList{field.Invalid(path, field.OmitValueType{}, st.Message)}
	}
	errs := make(field.ErrorList, 0, len(st.Details.Causes))
	for _, c := range st.Details.Causes {
		errs = append(errs, causeError(path, c))
	}
	return errs
}

// causeError is one cause of a refusal under path. The cause's message starts with its type's
// text ("Invalid value: ..."), which the field error prints again: it is cut off. A cause of an
// unknown type is an Invalid value.
func causeError(path *field.Path, c metav1.StatusCause) *field.Error {
	t := field.ErrorType(c.Type)
	detail := c.Message
	if s := t.String(); !strings.HasPrefix(s, "<unknown error") {
		detail = strings.TrimPrefix(strings.TrimPrefix(detail, s), ": ")
	} else {
		t = field.ErrorTypeInvalid
	}
	return &field.Error{Type: t, Field: JoinPath(path, c.Field), BadValue: field.OmitValueType{}, Detail: detail}
}

// JoinPath is the path of sub (a field path of an object, as the API server writes it in a
// cause: spec.resources[storage], or [0].name, or empty) under prefix, as a string.
func JoinPath(prefix *field.Path, sub string) string {
	switch {
	case sub == "":
		return prefix.String()
	case strings.HasPrefix(sub, "["):
		return prefix.String() + sub
	}
	return prefix.String() + "." + sub
}

// DryRun is one object an add-on would make for a JobSet, to be checked by the API server before
// the JobSet is admitted: Path is where it comes from in the JobSet (its template in the
// annotation), What names it in a Warning ("the PersistentVolumeClaim data-js").
type DryRun struct {
	Path   *field.Path
	What   string
	Object client.Object
	// Key, when not empty, is what the object's acceptance depends on besides what the add-on
	// builds the same for every JobSet (its name, its own labels): the namespace and the
	// template. An object whose Key was accepted less than DryRunner.Remember ago is not
	// dry-run again.
	Key string
	// Identity, when set, says whose an existing object of the name may be (contract.Identity.Of):
	// a create that collides (AlreadyExists) with one that is another JobSet's (Foreign) is a
	// refusal naming that JobSet, whatever the dry run of the object itself says; one that is
	// this JobSet's, retained by an earlier JobSet of its name for the same part, or a user's
	// (Unmanaged) is accepted. Without it, a collision is accepted.
	Identity *contract.Identity
	// TemplateSpec says that the object's spec is its template's, at Path.spec, as the user
	// wrote it. Then a field of it that the API server accepts and drops (Dropped: a feature it
	// has turned off) is a Warning naming the field under Path, for every JobSet: such an
	// acceptance is not remembered.
	TemplateSpec bool
}

// takenError is a create's answer when the name is another JobSet's (DryRun.Identity).
type takenError struct {
	what, holder string
}

func (e *takenError) Error() string { return Taken(e.what, e.holder) }

// Taken is the refusal of a JobSet one of whose objects, what, exists and is another's:
// holder (contract.Identity.Holder).
func Taken(what, holder string) string {
	return fmt.Sprintf("%s exists and was made for %s, not for this JobSet (names are joined with \"-\", so two JobSets can give the same one): rename the JobSet, the ReplicatedJob or the template, or delete it if its data is not needed",
		what, holder)
}

// taken reads the existing object of obj's name and tells whether it is another JobSet's
// (a *takenError) by id; nil when it is not, or is gone.
func (d *DryRunner) taken(ctx context.Context, what string, obj client.Object, id *contract.Identity) error {
	existing, ok := obj.DeepCopyObject().(client.Object)
	if !ok {
		return fmt.Errorf("%T is not a client.Object", obj)
	}
	if err := d.Client.Get(ctx, client.ObjectKeyFromObject(obj), existing); err != nil {
		return client.IgnoreNotFound(err)
	}
	if id.Of(existing) == contract.Foreign {
		return &takenError{what: what, holder: id.Holder(existing)}
	}
	return nil
}

// TemplateKey is a DryRun.Key: a SHA-256 (hex) of the namespace and the template's labels,
// annotations and spec (what the add-on copies into the object from it), as JSON, so that a key
// is small whatever the template's size; "" (not remembered) should they not encode.
func TemplateKey(namespace string, labels, annotations map[string]string, spec any) string {
	key, err := json.Marshal(struct {
		Namespace   string
		Labels      map[string]string
		Annotations map[string]string
		Spec        any
	}{namespace, labels, annotations, spec})
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(key)
	return hex.EncodeToString(sum[:])
}

// DryRunner checks, at admission, the objects an add-on would make for a JobSet with a
// server-side dry-run create of each (client.DryRunAll), so that the API server's own rules —
// its validation, its admission plugins, other webhooks, the namespace's quota — judge them,
// not a copy of those rules. A nil *DryRunner, or one without a Client, checks nothing.
type DryRunner struct {
	// Client makes the dry runs. It should have a rate limit of its own (NewDryRunClient): a
	// webhook must not wait behind its reconciler's API calls.
	Client client.Client
	// Workers is how many dry runs one JobSet's check makes at once (default 4).
	Workers int
	// Timeout bounds one check (default DefaultDryRunTimeout): well under the JobSet webhook's
	// own timeout (10 s), so that a dry run held up by someone else's webhook is a Warning,
	// not the JobSet refused by the webhook's failure policy.
	Timeout time.Duration
	// Name of the add-on, at the head of its Warnings.
	Name string
	// Remember is how long an accepted object's Key is remembered: JobSets made from one
	// template in a burst (a sweep, an array of experiments) are checked once. A ResourceQuota
	// filled meanwhile is then not warned of (the create itself waits for it, as always).
	Remember time.Duration
	Clock    clock.PassiveClock

	mu       sync.Mutex
	accepted *recent // by a hash of the Key: bounded whatever the templates' size
	// inFlight joins the dry runs of one Key under way at once (JobSets of one template
	// created together): one is sent, and the others take its acceptance; a refusal or a
	// failure, they check for themselves.
	inFlight singleflight.Group
}

// DefaultDryRunTimeout is DryRunner.Timeout when unset.
const DefaultDryRunTimeout = 4 * time.Second

// maxRemembered bounds DryRunner's accepted keys; when full, the one accepted longest ago goes.
const maxRemembered = 1024

func (d *DryRunner) remembered(key string) bool {
	if key == "" || d.Remember <= 0 {
		return false
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.accepted != nil && d.accepted.has(key, d.clock().Now())
}

func (d *DryRunner) remember(key string) {
	if key == "" || d.Remember <= 0 {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.accepted == nil {
		d.accepted = newRecent(maxRemembered, d.Remember)
	}
	d.accepted.add(key, d.clock().Now())
}

func (d *DryRunner) clock() clock.PassiveClock {
	if d.Clock == nil {
		return clock.RealClock{}
	}
	return d.Clock
}

// NewDryRunClient is a client for a DryRunner: the manager's identity, scheme and mapper, with a
// rate limit of its own (qps, burst).
func NewDryRunClient(mgr ctrl.Manager, qps float32, burst int) (client.Client, error) {
	rc := rest.CopyConfig(mgr.GetConfig())
	rc.QPS, rc.Burst = qps, burst
	return client.New(rc, client.Options{Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper()})
}

// Check dry-runs every object, Workers at a time, and returns, under each object's Path, the
// causes of those the API server refuses (Refused: refuse the JobSet with them) and a Warning
// for each one whose dry run failed for a reason that may change (Unsure: admit the JobSet, and
// say so), or that it accepts without some of its template's fields (DryRun.TemplateSpec: admit
// the JobSet, and name them). The objects are not changed: each is copied before its create.
func (d *DryRunner) Check(ctx context.Context, objs []DryRun) (field.ErrorList, []string) {
	if d == nil || d.Client == nil || len(objs) == 0 {
		return nil, nil
	}
	timeout := d.Timeout
	if timeout <= 0 {
		timeout = DefaultDryRunTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	results := make([]dryRunResult, len(objs))
	ran := make([]bool, len(objs))
	workers := d.Workers
	if workers <= 0 {
		workers = 4
	}
	workqueue.ParallelizeUntil(ctx, workers, len(objs), func(i int) {
		ran[i] = true
		results[i] = d.one(ctx, &objs[i])
	})
	var errs field.ErrorList
	var warnings []string
	for i, r := range results {
		if !ran[i] {
			r.err = ctx.Err() // ParallelizeUntil stopped before this one
		}
		refused, warning := d.judge(ctx, &objs[i], r)
		errs = append(errs, refused...)
		if warning != "" {
			warnings = append(warnings, warning)
		}
	}
	return errs, warnings
}

// dryRunResult is what one object's dry run says: the create's answer and, when it is an
// acceptance of an object made from its template (DryRun.TemplateSpec), the fields the API
// server dropped from it (Dropped).
type dryRunResult struct {
	err     error
	dropped []string
}

// judge is, for the object o, what its dry run's result r tells the JobSet: the causes of its
// refusal, or a Warning.
func (d *DryRunner) judge(ctx context.Context, o *DryRun, r dryRunResult) (field.ErrorList, string) {
	var taken *takenError
	if errors.As(r.err, &taken) {
		dryRuns.WithLabelValues(Refused.String()).Inc() // for good, while that object is there
		return field.ErrorList{field.Invalid(o.Path, field.OmitValueType{}, taken.Error())}, ""
	}
	verdict := Classify(r.err)
	dryRuns.WithLabelValues(verdict.String()).Inc()
	switch {
	case verdict == Refused:
		return Causes(o.Path, r.err), ""
	case verdict == Unsure:
		logf.FromContext(ctx).V(2).Info("A dry run failed for a reason that may change", "addon", d.Name, "path", o.Path.String(), "err", r.err)
		return nil, fmt.Sprintf("%s: %s of %s was not accepted by a dry run, for a reason that may change (%v): the JobSet is admitted; %s is made once the API server accepts it, and the pods that use it wait until then",
			d.Name, o.What, o.Path, r.err, o.What)
	case len(r.dropped) > 0:
		logf.FromContext(ctx).V(2).Info("A dry run was accepted without some fields", "addon", d.Name, "path", o.Path.String(), "dropped", r.dropped)
		return nil, droppedWarning(d.Name, o, r.dropped)
	}
	return nil, ""
}

// one dry-runs obj, or takes its template's remembered acceptance, and returns the answer; an
// object of its name that exists and is another's (DryRun.Identity) is a takenError. Dry runs
// of one Key under way at once share one create, and its dropped fields (the template's); an
// acceptance is remembered only when nothing was dropped.
func (d *DryRunner) one(ctx context.Context, o *DryRun) dryRunResult {
	if d.remembered(o.Key) {
		if o.Identity != nil {
			// Accepted for another JobSet's name: the object of this name may still be taken.
			return dryRunResult{err: d.taken(ctx, o.What, o.Object, o.Identity)}
		}
		return dryRunResult{}
	}
	obj, ok := o.Object.DeepCopyObject().(client.Object)
	if !ok {
		return dryRunResult{err: fmt.Errorf("%T is not a client.Object", o.Object)}
	}
	// The create writes the API server's answer over obj; o.Object is what was sent.
	create := func() dryRunResult {
		if err := d.Client.Create(ctx, obj, client.DryRunAll); err != nil || !o.TemplateSpec {
			return dryRunResult{err: err}
		}
		return dryRunResult{dropped: Dropped(o.Object, obj)}
	}
	var r dryRunResult
	if key := o.Key; key != "" && d.Remember > 0 {
		v, _, shared := d.inFlight.Do(key, func() (any, error) { return create(), nil })
		r, _ = v.(dryRunResult)
		if r.err != nil && shared {
			r = create() // another's answer, which may name its object: ask for ours
		}
	} else {
		r = create()
	}
	if r.err == nil && len(r.dropped) == 0 {
		d.remember(o.Key)
	}
	if apierrors.IsAlreadyExists(r.err) && o.Identity != nil {
		r.err = d.taken(ctx, o.What, o.Object, o.Identity)
	}
	return r
}
