package webhook

import (
	"context"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/controllers/resourceclaims/internal/claims"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// TestJobWebhookMakesItsClaims: a Job whose claims the cache does not hold makes them, ahead of
// it, for its JobSet, so that no other JobSet of a colliding name makes one first and has the
// Job's pods get its devices; one made meanwhile for another Job denies the Job; one that
// cannot be made (a quota) denies it, naming the claim; a dry run makes nothing.
func TestJobWebhookMakesItsClaims(t *testing.T) {
	const templates = `[{metadata: {name: gpu}, spec: {}}]`
	const name = "js-workers-0-gpu"
	js := testJobSet(templates, nil)
	js.UID = "uid-js"
	theirs := claims.Claim("ns", "js-workers", "0", 0, claims.Owner(&metav1.ObjectMeta{Name: "js-workers-0-0", UID: types.UID("other")}, batchv1.SchemeGroupVersion.WithKind("Job")),
		claims.Binding{Template: contract.ResourceClaimTemplate{ObjectMeta: metav1.ObjectMeta{Name: "gpu"}}, ClaimName: name})
	for _, tc := range []struct {
		name     string
		dryRun   bool
		existing client.Object // in the API server, not in the cache
		create   error
		denied   string
		made     bool
	}{
		{name: "made ahead, for the JobSet", made: true},
		{name: "a dry run makes nothing", dryRun: true},
		{name: "made meanwhile for another JobSet's Job", existing: theirs, denied: "the ResourceClaim " + name + " exists and was made for JobSet js-workers"},
		{
			name:   "cannot be made",
			create: apierrors.NewForbidden(schema.GroupResource{Group: "resource.k8s.io", Resource: "resourceclaims"}, name, errString("exceeded quota: q")),
			denied: "resourceclaims: Job js-workers-0 is not created while its ResourceClaim " + name + " (template gpu) does not exist yet and cannot be made",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := fake.NewClientBuilder().WithInterceptorFuncs(interceptor.Funcs{
				Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
					if tc.create != nil {
						return tc.create
					}
					return c.Create(ctx, obj, opts...)
				},
			})
			if tc.existing != nil {
				b = b.WithObjects(tc.existing)
			}
			api := b.Build()
			job := testJob(templates)
			job.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(js, jobsetv1alpha2.GroupVersion.WithKind("JobSet"))}
			req := jobRequest(t, job)
			req.DryRun = ptr.To(tc.dryRun)
			resp := (&JobWebhook{Gates: gates(t, true), Claims: fake.NewClientBuilder().Build(), Client: api}).Handle(context.Background(), req)
			if tc.denied != "" {
				if resp.Allowed || resp.Result == nil || !strings.Contains(resp.Result.Message, tc.denied) {
					t.Fatalf("response %+v, want denied with %q", resp.Result, tc.denied)
				}
			} else if !resp.Allowed {
				t.Fatalf("denied: %+v", resp.Result)
			}
			var got resourcev1.ResourceClaim
			err := api.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: name}, &got)
			if !tc.made {
				if tc.existing == nil && !apierrors.IsNotFound(err) {
					t.Fatalf("claim %s: %v, want none made", name, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			ref := metav1.GetControllerOf(&got)
			if ref == nil || ref.Kind != "JobSet" || ref.UID != js.UID || got.Labels[contract.JobSetNameLabelKey] != "js" ||
				got.Labels[contract.ResourceClaimTemplateLabelKey] != "gpu" || got.Labels[contract.JobIndexLabelKey] != "0" {
				t.Errorf("claim %s is not made ahead for JobSet js: controller %+v, labels %v", name, ref, got.Labels)
			}
		})
	}
}

type errString string

func (e errString) Error() string { return string(e) }
