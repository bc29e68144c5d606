package webhook

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/jobset-addons/jobset-addons/controllers/resourceclaims/internal/claims"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// TestJobWebhookClaimTaken: a Job one of whose claims exists in the cache and was made for
// another Job (of another JobSet, or another part of its own) is denied, naming the claim, the
// template's field and the JobSet and Job that hold it; a claim made ahead for it, one left by
// an earlier Job of the same JobSet, ReplicatedJob and index, a user's, one of an earlier
// restart attempt (another name), a shadowed template's and a claim the cache does not give
// let it pass with its claims.
func TestJobWebhookClaimTaken(t *testing.T) {
	// Job js-workers-0's template 1-gpu gives the claim js-workers-0-1-gpu, as JobSet
	// js-workers's Job js-workers-0-1 (ReplicatedJob 0) with template gpu does, and JobSet js's
	// Job js-workers-0-1 (ReplicatedJob workers-0).
	const templates = `[{metadata: {name: data}, spec: {}}, {metadata: {name: 1-gpu}, spec: {}}]`
	const name = "js-workers-0-1-gpu"
	jobOwner := func(name, uid string) metav1.OwnerReference {
		return claims.Owner(&metav1.ObjectMeta{Name: name, UID: types.UID(uid)}, batchv1.SchemeGroupVersion.WithKind("Job"))
	}
	// claim is the claim of template of Job index of ReplicatedJob rj of JobSet jobSet.
	claim := func(jobSet, rj string, index int, template string, owner metav1.OwnerReference) *resourcev1.ResourceClaim {
		b := claims.Binding{Template: contract.ResourceClaimTemplate{ObjectMeta: metav1.ObjectMeta{Name: template}}, ClaimName: name}
		return claims.Claim("ns", jobSet, rj, index, owner, b)
	}
	other := claim("js-workers", "0", 1, "gpu", jobOwner("js-workers-0-1", "other"))
	restarted := testJob(templates)
	restarted.Labels[contract.RestartAttemptLabelKey] = "1"
	shadowing := testJob(templates)
	shadowing.Spec.Template.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "1-gpu", ResourceClaimTemplateName: ptr.To("t")}}
	user := claim("js", "workers", 0, "1-gpu", jobOwner("js-workers-0", "old"))
	delete(user.Labels, contract.ManagedByLabelKey)
	own := []string{"js-workers-0-data", name}
	for _, tc := range []struct {
		name     string
		job      *batchv1.Job
		existing *resourcev1.ResourceClaim
		getErr   error
		denied   string // the denial, or "" for allowed with the claims
		claims   []string
	}{
		{name: "free", claims: own},
		{
			name:     "another JobSet's",
			existing: other,
			denied: `metadata.annotations[resourceclaims.jobset-addons.io/templates][1].metadata.name: Forbidden: the ResourceClaim js-workers-0-1-gpu exists and was made for ` +
				`JobSet js-workers (uid other) for job-index=1, replicatedjob-name=0, template=gpu, held by Job js-workers-0-1, not for this JobSet`,
		},
		{
			name:     "another part of the JobSet's",
			existing: claim("js", "workers-0", 1, "gpu", jobOwner("js-workers-0-1", "other")),
			denied:   "the ResourceClaim js-workers-0-1-gpu exists and was made for JobSet js (uid other) for job-index=1, replicatedjob-name=workers-0, template=gpu, held by Job js-workers-0-1",
		},
		{name: "made ahead for it", existing: claim("js", "workers", 0, "1-gpu", claims.JobSetOwner(testJobSet(templates, nil))), claims: own},
		{name: "left by an earlier Job of its name", existing: claim("js", "workers", 0, "1-gpu", jobOwner("js-workers-0", "old")), claims: own},
		{name: "a user's", existing: user, claims: own},
		{name: "restart attempt 1: attempt 0's name is another's", job: restarted, existing: other, claims: []string{"js-workers-0-r1-data", "js-workers-0-r1-1-gpu"}},
		{name: "the shadowed template's name is another's", job: shadowing, existing: other, claims: []string{"t", "js-workers-0-data"}},
		{name: "the cache cannot say", existing: other, getErr: errors.New("cache not started"), claims: own},
	} {
		t.Run(tc.name, func(t *testing.T) {
			job := tc.job
			if job == nil {
				job = testJob(templates)
			}
			b := fake.NewClientBuilder().WithInterceptorFuncs(interceptor.Funcs{
				Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
					if tc.getErr != nil {
						return tc.getErr
					}
					return c.Get(ctx, key, obj, opts...)
				},
			})
			if tc.existing != nil {
				b = b.WithObjects(tc.existing)
			}
			req := jobRequest(t, job)
			resp := (&JobWebhook{Gates: gates(t, true), Claims: b.Build()}).Handle(context.Background(), req)
			if tc.denied != "" {
				if resp.Allowed || resp.Result == nil || !strings.Contains(resp.Result.Message, tc.denied) {
					t.Fatalf("response %+v, want denied with %q", resp.Result, tc.denied)
				}
				return
			}
			if !resp.Allowed {
				t.Fatalf("denied: %+v", resp.Result)
			}
			var got []string
			for _, rc := range apply(t, req, resp).Spec.Template.Spec.ResourceClaims {
				got = append(got, ptr.Deref(rc.ResourceClaimName, ptr.Deref(rc.ResourceClaimTemplateName, "")))
			}
			if diff := cmp.Diff(tc.claims, got); diff != "" {
				t.Errorf("claims (-want +got):\n%s", diff)
			}
		})
	}
}
