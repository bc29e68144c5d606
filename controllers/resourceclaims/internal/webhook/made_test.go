package webhook

import (
	"context"
	"strconv"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/controllers/resourceclaims/internal/claims"
	"github.com/jobset-addons/jobset-addons/pkg/addon/addontest"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// TestJobWebhookMakesItsClaims: a Job whose claims the cache does not hold makes them, ahead of
// it, for its JobSet, so that no other JobSet of a colliding name makes one first and has the
// Job's pods get its devices; one made meanwhile for another Job denies the Job; one that
// cannot be made (a quota) denies it, naming the claim; a dry run makes nothing. A Job's owner
// reference and labels are not the JobSet's word: nothing is made for a Job its JobSet does not
// make (gone, another UID, another name, a ReplicatedJob or index it does not have), and the Job
// is admitted as before.
func TestJobWebhookMakesItsClaims(t *testing.T) {
	const templates = `[{metadata: {name: gpu}, spec: {}}]`
	const name = "js-workers-0-gpu"
	js := testJobSet(templates, nil)
	js.UID = "uid-js"
	theirs := claims.Claim("ns", "js-workers", "0", 0, claims.Owner(&metav1.ObjectMeta{Name: "js-workers-0-0", UID: types.UID("other")}, batchv1.SchemeGroupVersion.WithKind("Job")),
		claims.Binding{Template: contract.ResourceClaimTemplate{ObjectMeta: metav1.ObjectMeta{Name: "gpu"}}, ClaimName: name})
	for _, tc := range []struct {
		name     string
		job      *batchv1.Job // nil: Job js-workers-0, as js makes it
		jobSet   string       // where js is: "" the cache (and the API server), "api" the API server only, "gone" nowhere
		dryRun   bool
		existing client.Object // in the API server, not in the cache
		create   error
		denied   string
		made     bool
	}{
		{name: "made ahead, for the JobSet", made: true},
		{name: "the cache does not show the JobSet yet: made, for the JobSet the API server has", jobSet: "api", made: true},
		{name: "a dry run makes nothing", dryRun: true},
		{name: "made meanwhile for another JobSet's Job", existing: theirs, denied: "the ResourceClaim " + name + " exists and was made for JobSet js-workers"},
		{
			name:   "cannot be made",
			create: apierrors.NewForbidden(schema.GroupResource{Group: "resource.k8s.io", Resource: "resourceclaims"}, name, errString("exceeded quota: q")),
			denied: "resourceclaims: Job js-workers-0 is not created while its ResourceClaim " + name + " (template gpu) does not exist yet and cannot be made",
		},
		{name: "an index beyond the ReplicatedJob's replicas: nothing made", job: forgedJob(js, templates, "workers", 3, js.UID)},
		{name: "a ReplicatedJob the JobSet does not have: nothing made", job: forgedJob(js, templates, "trainers", 0, js.UID)},
		{name: "the JobSet's UID is not the owner reference's: nothing made", job: forgedJob(js, templates, "workers", 0, "uid-old")},
		{name: "the jobset-name label names another JobSet: nothing made", job: addontest.Job(js, "workers", 0).ControlledBy(js).Label(contract.JobSetNameLabelKey, "other").Obj()},
		{name: "the JobSet is gone: nothing made", jobSet: "gone"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			api, cache := madeClients(t, tc.jobSet, js, tc.existing, tc.create)
			job := tc.job
			if job == nil {
				job = addontest.Job(js, "workers", 0).ControlledBy(js).Obj()
			}
			req := jobRequest(t, job)
			req.DryRun = ptr.To(tc.dryRun)
			resp := (&JobWebhook{Gates: gates(t, true), Claims: fake.NewClientBuilder().Build(), JobSets: cache, Client: api}).Handle(context.Background(), req)
			if tc.denied != "" {
				if resp.Allowed || resp.Result == nil || !strings.Contains(resp.Result.Message, tc.denied) {
					t.Fatalf("response %+v, want denied with %q", resp.Result, tc.denied)
				}
			} else if !resp.Allowed {
				t.Fatalf("denied: %+v", resp.Result)
			}
			wantMade(t, api, name, tc.made, tc.existing, js)
		})
	}
}

// forgedJob is a Job with js's templates, controlled by a JobSet js's name and uid, labelled for
// ReplicatedJob rj and index, and of the name JobSet js would give that Job.
func forgedJob(js *jobsetv1alpha2.JobSet, templates, rj string, index int, uid types.UID) *batchv1.Job {
	job := testJob(templates)
	job.Name = claims.JobName(js.Name, rj, index)
	job.Labels[contract.ReplicatedJobNameLabelKey] = rj
	job.Labels[contract.JobIndexLabelKey] = strconv.Itoa(index)
	ref := metav1.NewControllerRef(js, jobsetv1alpha2.GroupVersion.WithKind("JobSet"))
	ref.UID = uid
	job.OwnerReferences = []metav1.OwnerReference{*ref}
	return job
}

// madeClients are the API server (holding existing, and js unless it is gone; its creates
// answer create, when set) and the cache of JobSets (holding js when where is "").
func madeClients(t *testing.T, where string, js *jobsetv1alpha2.JobSet, existing client.Object, create error) (client.Client, client.Reader) {
	t.Helper()
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, jobsetv1alpha2.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	b := fake.NewClientBuilder().WithScheme(scheme).WithInterceptorFuncs(interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if create != nil {
				return create
			}
			return c.Create(ctx, obj, opts...)
		},
	})
	if existing != nil {
		b = b.WithObjects(existing)
	}
	if where != "gone" {
		b = b.WithObjects(js.DeepCopy())
	}
	cache := fake.NewClientBuilder().WithScheme(scheme)
	if where == "" {
		cache = cache.WithObjects(js.DeepCopy())
	}
	return b.Build(), cache.Build()
}

// wantMade checks that the API server holds claim name made ahead for JobSet js, if made, and
// otherwise no claim but existing.
func wantMade(t *testing.T, api client.Client, name string, made bool, existing client.Object, js *jobsetv1alpha2.JobSet) {
	t.Helper()
	if !made {
		var list resourcev1.ResourceClaimList
		if err := api.List(context.Background(), &list); err != nil {
			t.Fatal(err)
		}
		for _, c := range list.Items {
			if existing == nil || c.Name != existing.GetName() {
				t.Errorf("claim %s made, want none", c.Name)
			}
		}
		return
	}
	var got resourcev1.ResourceClaim
	if err := api.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: name}, &got); err != nil {
		t.Fatal(err)
	}
	ref := metav1.GetControllerOf(&got)
	if ref == nil || ref.Kind != "JobSet" || ref.UID != js.UID || got.Labels[contract.JobSetNameLabelKey] != "js" ||
		got.Labels[contract.ResourceClaimTemplateLabelKey] != "gpu" || got.Labels[contract.JobIndexLabelKey] != "0" {
		t.Errorf("claim %s is not made ahead for JobSet js: controller %+v, labels %v", name, ref, got.Labels)
	}
}

type errString string

func (e errString) Error() string { return string(e) }
