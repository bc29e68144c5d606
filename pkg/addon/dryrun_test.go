package addon

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

var pvcGR = schema.GroupResource{Resource: "persistentvolumeclaims"}

// invalidPVC is the API server's answer to a PVC asking for -1Gi in one access mode it does not
// know.
func invalidPVC(name string) error {
	return apierrors.NewInvalid(schema.GroupKind{Kind: "PersistentVolumeClaim"}, name, field.ErrorList{
		field.Invalid(field.NewPath("spec", "resources").Key("storage"), "-1Gi", "must be greater than zero"),
		field.NotSupported(field.NewPath("spec", "accessModes"), "ReadWriteSometimes", []string{"ReadWriteOnce", "ReadWriteMany"}),
		field.Invalid(field.NewPath("metadata", "name"), name, "must be no more than 253 characters"),
	})
}

func TestClassify(t *testing.T) {
	terminating := apierrors.NewForbidden(pvcGR, "data-js", errors.New("unable to create new content in namespace ns because it is being terminated"))
	terminating.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: corev1.NamespaceTerminatingCause}}
	denied422 := &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: 422, Reason: "Forbidden", Message: `admission webhook "policy.example.com" denied the request: no`}}
	for _, tc := range []struct {
		name string
		err  error
		want Verdict
	}{
		{name: "accepted", err: nil, want: Accepted},
		{name: "the name exists", err: apierrors.NewAlreadyExists(pvcGR, "data-js"), want: Accepted},
		{name: "invalid", err: invalidPVC("data-js"), want: Refused},
		{name: "bad request", err: apierrors.NewBadRequest("the object does not decode"), want: Refused},
		{name: "422 of another reason (a policy or webhook)", err: denied422, want: Refused},
		{name: "quota exceeded", err: apierrors.NewForbidden(pvcGR, "data-js", errors.New("exceeded quota: q, requested: requests.storage=1Gi, used: requests.storage=10Gi, limited: requests.storage=10Gi")), want: Unsure},
		{name: "limit range", err: apierrors.NewForbidden(pvcGR, "data-js", errors.New("maximum storage usage per PersistentVolumeClaim is 5Gi, but request is 10Gi")), want: Unsure},
		{name: "another webhook denied (403)", err: apierrors.NewForbidden(pvcGR, "data-js", errors.New(`admission webhook "x" denied the request`)), want: Unsure},
		{name: "namespace terminating", err: terminating, want: Unsure},
		{name: "another webhook timed out", err: apierrors.NewInternalError(errors.New(`failed calling webhook "x": context deadline exceeded`)), want: Unsure},
		{name: "server timeout", err: apierrors.NewTimeoutError("slow", 1), want: Unsure},
		{name: "throttled", err: apierrors.NewTooManyRequests("slow down", 1), want: Unsure},
		{name: "not found (a namespace-scoped object it needs)", err: apierrors.NewNotFound(schema.GroupResource{Resource: "namespaces"}, "ns"), want: Unsure},
		{name: "network", err: errors.New("connection refused"), want: Unsure},
		{name: "cancelled", err: context.DeadlineExceeded, want: Unsure},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Classify(tc.err); got != tc.want {
				t.Errorf("Classify(%v) = %s, want %s", tc.err, got, tc.want)
			}
		})
	}
}

func TestCauses(t *testing.T) {
	path := field.NewPath("metadata", "annotations").Key("volumeclaims.jobset-addons.io/policies").Index(0).Child("templates").Index(0)
	for _, tc := range []struct {
		name string
		err  error
		want []string
	}{
		{name: "causes under the template", err: invalidPVC("data-js"), want: []string{
			`metadata.annotations[volumeclaims.jobset-addons.io/policies][0].templates[0].spec.resources[storage]: Invalid value: "-1Gi": must be greater than zero`,
			`metadata.annotations[volumeclaims.jobset-addons.io/policies][0].templates[0].spec.accessModes: Unsupported value: "ReadWriteSometimes": supported values: "ReadWriteOnce", "ReadWriteMany"`,
			`metadata.annotations[volumeclaims.jobset-addons.io/policies][0].templates[0].metadata.name: Invalid value: "data-js": must be no more than 253 characters`,
		}},
		{name: "a cause without a field", err: &apierrors.StatusError{ErrStatus: metav1.Status{Code: 422, Reason: metav1.StatusReasonInvalid, Details: &metav1.StatusDetails{
			Causes: []metav1.StatusCause{{Type: metav1.CauseTypeForbidden, Message: "Forbidden: no"}},
		}}}, want: []string{
			`metadata.annotations[volumeclaims.jobset-addons.io/policies][0].templates[0]: Forbidden: no`,
		}},
		{name: "a cause at an index", err: &apierrors.StatusError{ErrStatus: metav1.Status{Code: 422, Reason: metav1.StatusReasonInvalid, Details: &metav1.StatusDetails{
			Causes: []metav1.StatusCause{{Type: metav1.CauseTypeFieldValueRequired, Field: "[1].name", Message: "Required value"}},
		}}}, want: []string{
			`metadata.annotations[volumeclaims.jobset-addons.io/policies][0].templates[0][1].name: Required value`,
		}},
		{name: "a cause of a type field does not know", err: &apierrors.StatusError{ErrStatus: metav1.Status{Code: 422, Reason: metav1.StatusReasonInvalid, Details: &metav1.StatusDetails{
			Causes: []metav1.StatusCause{{Type: "ExpressionInvalid", Field: "spec", Message: "the policy says no"}},
		}}}, want: []string{
			`metadata.annotations[volumeclaims.jobset-addons.io/policies][0].templates[0].spec: Invalid value: the policy says no`,
		}},
		{name: "no causes", err: &apierrors.StatusError{ErrStatus: metav1.Status{Code: 422, Reason: metav1.StatusReasonInvalid, Message: "ValidatingAdmissionPolicy 'p' denied request"}}, want: []string{
			`metadata.annotations[volumeclaims.jobset-addons.io/policies][0].templates[0]: Invalid value: ValidatingAdmissionPolicy 'p' denied request`,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, e := range Causes(path, tc.err) {
				got = append(got, e.Error())
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("Causes:\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}

func pvc(name, storage string) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(storage)}},
		},
	}
}

// TestCheck: each object is dry-run (and only dry-run), its refusal mapped under its path, a
// failure that may change a Warning, an existing name nothing.
func TestCheck(t *testing.T) {
	answers := map[string]error{
		"bad-js":    invalidPVC("bad-js"),
		"quota-js":  apierrors.NewForbidden(pvcGR, "quota-js", errors.New("exceeded quota: q")),
		"exists-js": apierrors.NewAlreadyExists(pvcGR, "exists-js"),
	}
	var mu sync.Mutex
	var dryRuns []string
	c := fake.NewClientBuilder().WithInterceptorFuncs(interceptor.Funcs{
		Create: func(ctx context.Context, _ client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			co := &client.CreateOptions{}
			co.ApplyOptions(opts)
			if !slices.Equal(co.DryRun, []string{metav1.DryRunAll}) {
				t.Errorf("%s created without dry run", obj.GetName())
			}
			name := obj.GetName()
			obj.SetName("changed") // the caller's object must not change
			mu.Lock()
			dryRuns = append(dryRuns, name)
			mu.Unlock()
			return answers[name]
		},
	}).Build()
	path := func(i int) *field.Path { return field.NewPath("metadata", "annotations").Key("k").Index(i) }
	objs := []DryRun{
		{Path: path(0), What: "the PersistentVolumeClaim good-js", Object: pvc("good-js", "1Gi")},
		{Path: path(1), What: "the PersistentVolumeClaim bad-js", Object: pvc("bad-js", "1Gi")},
		{Path: path(2), What: "the PersistentVolumeClaim quota-js", Object: pvc("quota-js", "1Gi")},
		{Path: path(3), What: "the PersistentVolumeClaim exists-js", Object: pvc("exists-js", "1Gi")},
	}
	d := &DryRunner{Client: c, Name: "volumeclaims", Workers: 2}
	errs, warnings := d.Check(context.Background(), objs)
	var got []string
	for _, e := range errs {
		got = append(got, e.Field)
	}
	want := []string{"metadata.annotations[k][1].spec.resources[storage]", "metadata.annotations[k][1].spec.accessModes", "metadata.annotations[k][1].metadata.name"}
	if !slices.Equal(got, want) {
		t.Errorf("refused at %q, want %q", got, want)
	}
	if len(warnings) != 1 || !strings.HasPrefix(warnings[0], "volumeclaims: the PersistentVolumeClaim quota-js of metadata.annotations[k][2] was not accepted by a dry run, for a reason that may change (") ||
		!strings.Contains(warnings[0], "exceeded quota: q") {
		t.Errorf("warnings %q", warnings)
	}
	if len(dryRuns) != len(objs) {
		t.Errorf("%d dry runs, want %d", len(dryRuns), len(objs))
	}
	for i, o := range objs {
		if o.Object.GetName() == "changed" {
			t.Errorf("object %d changed by its dry run", i)
		}
	}
	var none *DryRunner
	if errs, warnings := none.Check(context.Background(), objs); errs != nil || warnings != nil {
		t.Errorf("a nil DryRunner checked: %v %v", errs, warnings)
	}
}

// TestCheckTaken: a create that collides with another JobSet's object of the name is a
// refusal naming that JobSet; with one left by an earlier JobSet of this name for the same
// part, or a user's, it is accepted; a template remembered as accepted is still looked up.
func TestCheckTaken(t *testing.T) {
	labelled := func(name, jobSet string) *corev1.PersistentVolumeClaim {
		p := pvc(name, "1Gi")
		p.Namespace = "ns"
		p.Labels = map[string]string{contract.ManagedByLabelKey: contract.VolumeClaimsManagedByValue, contract.JobSetNameLabelKey: jobSet, contract.VolumeClaimTemplateLabelKey: "ckpt"}
		return p
	}
	user := pvc("ckpt-user", "1Gi")
	user.Namespace = "ns"
	c := fake.NewClientBuilder().WithObjects(labelled("ckpt-base-bert", "base-bert"), labelled("ckpt-bert", "bert"), user).WithInterceptorFuncs(interceptor.Funcs{
		Create: func(ctx context.Context, cl client.WithWatch, obj client.Object, _ ...client.CreateOption) error {
			if err := cl.Get(ctx, client.ObjectKeyFromObject(obj), obj.DeepCopyObject().(client.Object)); err == nil {
				return apierrors.NewAlreadyExists(pvcGR, obj.GetName()) // as the API server answers a dry run
			}
			return nil
		},
	}).Build()
	id := func(jobSet string) *contract.Identity {
		return &contract.Identity{
			ManagedBy: contract.VolumeClaimsManagedByValue, JobSet: jobSet, UIDKey: contract.VolumeClaimJobSetUIDAnnotationKey,
			Labels: map[string]string{contract.VolumeClaimTemplateLabelKey: "ckpt"}, Parts: contract.VolumeClaimPartLabelKeys,
		}
	}
	idBert := id("bert")
	idBert.Labels = map[string]string{contract.VolumeClaimTemplateLabelKey: "ckpt-base"}
	mine := func(name string) *corev1.PersistentVolumeClaim { p := pvc(name, "1Gi"); p.Namespace = "ns"; return p }
	objs := []DryRun{
		{Path: field.NewPath("a"), What: "the PersistentVolumeClaim ckpt-base-bert", Object: mine("ckpt-base-bert"), Identity: idBert, Key: "k"},
		{Path: field.NewPath("b"), What: "the PersistentVolumeClaim ckpt-bert", Object: mine("ckpt-bert"), Identity: id("bert"), Key: "k"},
		{Path: field.NewPath("c"), What: "the PersistentVolumeClaim ckpt-user", Object: mine("ckpt-user"), Identity: id("bert"), Key: "k"},
		{Path: field.NewPath("d"), What: "the PersistentVolumeClaim ckpt-new", Object: mine("ckpt-new"), Identity: id("bert"), Key: "k"},
	}
	want := []string{`a: Invalid value: the PersistentVolumeClaim ckpt-base-bert exists and was made for JobSet base-bert for template=ckpt, not for this JobSet (names are joined with "-", so two JobSets can give the same one): rename the JobSet, the ReplicatedJob or the template, or delete it if its data is not needed`}
	for _, remember := range []time.Duration{0, time.Hour} {
		d := &DryRunner{Client: c, Name: "volumeclaims", Workers: 1, Remember: remember}
		for round := range 2 { // the second round with the template remembered, when it is
			errs, warnings := d.Check(context.Background(), objs)
			var got []string
			for _, e := range errs {
				got = append(got, e.Error())
			}
			if diff := cmp.Diff(want, got); diff != "" || len(warnings) > 0 {
				t.Errorf("remember %v, round %d: refusals (-want +got):\n%s\nwarnings %q", remember, round, diff, warnings)
			}
		}
	}
}

// TestCheckCancelled: a check whose context ends before its dry runs warns of each; it refuses
// nothing.
func TestCheckCancelled(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Nanosecond)
	defer cancel()
	<-ctx.Done()
	c := fake.NewClientBuilder().Build()
	errs, warnings := (&DryRunner{Client: c, Name: "x"}).Check(ctx, []DryRun{{Path: field.NewPath("a"), What: "it", Object: pvc("a", "1Gi")}})
	if len(errs) != 0 || len(warnings) != 1 {
		t.Errorf("errs %v, warnings %q", errs, warnings)
	}
}

// TestCause: objects made from one template, refused for one reason, have one cause, whatever
// their names.
func TestCause(t *testing.T) {
	a, b := Cause(invalidPVC("data-js-w-0-0")), Cause(invalidPVC("data-js-w-1-3"))
	if a != b {
		t.Errorf("causes differ by name:\n%s\n%s", a, b)
	}
	if !strings.Contains(a, "spec.resources[storage]: Invalid value") {
		t.Errorf("cause %q", a)
	}
	if Cause(errors.New("plain")) != "plain" {
		t.Errorf("a plain error's cause is not its text")
	}
}

// TestCheckRemembers: an object whose Key was accepted is not dry-run again until Remember has
// passed; a refused one always is.
func TestCheckRemembers(t *testing.T) {
	calls := 0
	c := fake.NewClientBuilder().WithInterceptorFuncs(interceptor.Funcs{
		Create: func(_ context.Context, _ client.WithWatch, obj client.Object, _ ...client.CreateOption) error {
			calls++
			if obj.GetName() == "bad" {
				return invalidPVC("bad")
			}
			return nil
		},
	}).Build()
	now := clocktesting.NewFakePassiveClock(time.Now())
	d := &DryRunner{Client: c, Name: "x", Remember: 10 * time.Second, Clock: now}
	check := func(name, key string) int {
		before := calls
		d.Check(context.Background(), []DryRun{{Path: field.NewPath("a"), What: "it", Object: pvc(name, "1Gi"), Key: key}})
		return calls - before
	}
	got := []int{check("good", "k"), check("good-2", "k"), check("good", ""), check("bad", "b"), check("bad", "b")}
	now.SetTime(now.Now().Add(11 * time.Second))
	got = append(got, check("good", "k"))
	if want := []int{1, 0, 1, 1, 1, 1}; !slices.Equal(got, want) {
		t.Errorf("dry runs per check %v, want %v", got, want)
	}
}

// TestRefusalsTell: one tell per template and cause, across reconciles, with the names sorted
// after the one the error names; an error every time.
func TestRefusalsTell(t *testing.T) {
	var told Told
	var tells []string
	for range 2 {
		var r Refusals
		r.Add("data", "data-js-w-1-0", invalidPVC("data-js-w-1-0"))
		r.Add("data", "data-js-w-0-0", invalidPVC("data-js-w-0-0"))
		r.Add("ckpt", "ckpt-js", apierrors.NewBadRequest("no"))
		err := r.Tell(&told, "uid", "PersistentVolumeClaims", func(template string, names []string, _ error) {
			tells = append(tells, template+" "+strings.Join(names, ","))
		})
		if err == nil || !strings.HasPrefix(err.Error(), "the API server refuses PersistentVolumeClaims: template ckpt: no; template data: ") {
			t.Errorf("Tell = %v", err)
		}
	}
	if want := []string{"ckpt ckpt-js", "data data-js-w-1-0,data-js-w-0-0"}; !slices.Equal(tells, want) {
		t.Errorf("told %q, want %q", tells, want)
	}
	told.Forget("uid")
	var again Refusals
	again.Add("ckpt", "ckpt-js", apierrors.NewBadRequest("no"))
	_ = again.Tell(&told, "uid", "PersistentVolumeClaims", func(template string, _ []string, _ error) { tells = append(tells, template) })
	if len(tells) != 3 {
		t.Errorf("after Forget, the refusal was not told again: %q", tells)
	}
	var none Refusals
	if err := none.Tell(&told, "uid", "x", nil); err != nil {
		t.Errorf("nothing refused: %v", err)
	}
}

// TestCheckTimeout: a dry run held up past Timeout (someone else's webhook on the object) is a
// Warning, in time for the JobSet webhook to answer.
func TestCheckTimeout(t *testing.T) {
	c := fake.NewClientBuilder().WithInterceptorFuncs(interceptor.Funcs{
		Create: func(ctx context.Context, _ client.WithWatch, _ client.Object, _ ...client.CreateOption) error {
			<-ctx.Done()
			return ctx.Err()
		},
	}).Build()
	start := time.Now()
	errs, warnings := (&DryRunner{Client: c, Name: "x", Timeout: 50 * time.Millisecond}).Check(context.Background(), []DryRun{{Path: field.NewPath("a"), What: "it", Object: pvc("a", "1Gi")}})
	if len(errs) != 0 || len(warnings) != 1 || !strings.Contains(warnings[0], "deadline exceeded") {
		t.Errorf("errs %v, warnings %q", errs, warnings)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("answered after %s", d)
	}
}

// TestCheckJoinsInFlight: checks of one Key under way at once send one dry run, and take its
// acceptance.
func TestCheckJoinsInFlight(t *testing.T) {
	var mu sync.Mutex
	calls := 0
	release := make(chan struct{})
	c := fake.NewClientBuilder().WithInterceptorFuncs(interceptor.Funcs{
		Create: func(_ context.Context, _ client.WithWatch, _ client.Object, _ ...client.CreateOption) error {
			mu.Lock()
			calls++
			mu.Unlock()
			<-release
			return nil
		},
	}).Build()
	d := &DryRunner{Client: c, Name: "x", Remember: time.Minute}
	together(10, release, func(i int) {
		errs, warnings := d.Check(context.Background(), []DryRun{{Path: field.NewPath("a"), What: "it", Object: pvc(fmt.Sprint("p", i), "1Gi"), Key: "k"}})
		if len(errs)+len(warnings) > 0 {
			t.Errorf("errs %v, warnings %q", errs, warnings)
		}
	})
	if calls != 1 {
		t.Errorf("%d dry runs, want 1", calls)
	}
}

// together runs check(i) for each i below n at once, gives them the time to all wait on the
// first one's dry run, which waits on release, then closes release and waits for them.
func together(n int, release chan struct{}, check func(i int)) {
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { check(i) })
	}
	time.Sleep(100 * time.Millisecond)
	close(release)
	wg.Wait()
}

// TestCheckMemoryBounded: 2,000 distinct keys of 200 KiB, each accepted once, leave the
// DryRunner holding a few hundred KiB, not the keys' text (which, kept whole up to a clearing
// at 1,024, reached 200 MiB).
func TestCheckMemoryBounded(t *testing.T) {
	c := fake.NewClientBuilder().WithInterceptorFuncs(interceptor.Funcs{
		Create: func(context.Context, client.WithWatch, client.Object, ...client.CreateOption) error { return nil },
	}).Build()
	d := &DryRunner{Client: c, Name: "x", Remember: time.Hour}
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	before := heap()
	body := strings.Repeat("t", 200<<10)
	obj := pvc("good", "1Gi")
	for i := range 2000 {
		d.Check(context.Background(), []DryRun{{Path: field.NewPath("a"), What: "it", Object: obj, Key: strconv.Itoa(i) + body}})
	}
	grew := int64(heap()) - int64(before)
	runtime.KeepAlive(d) // held, as a webhook holds its DryRunner
	if grew > 8<<20 {
		t.Errorf("the DryRunner's heap grew by %d MiB over 2,000 distinct keys, want a few hundred KiB", grew>>20)
	}
}
