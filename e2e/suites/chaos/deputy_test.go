package chaos_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	coschedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"
	volcanov1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/jobset-addons/jobset-addons/e2e/framework"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// TestConfusedDeputy: a user who may create JobSets in namespace A only (impersonated) cannot
// make any add-on create a PVC, a claim or a PodGroup in namespace B: templates that name B are
// refused at admission, and the JobSets the user may create make their objects in A alone.
func TestConfusedDeputy(t *testing.T) {
	f := features.New("confused deputy").Assess("nothing appears in another namespace", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		if err := waitProbe(ctx, cfg); err != nil {
			t.Fatal(err)
		}
		admin := framework.Client(t, cfg)
		a, b := newNamespace(ctx, t, admin, "deputy-a"), newNamespace(ctx, t, admin, "deputy-b")
		since := time.Now()
		framework.CreateAll(ctx, t, admin,
			&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: a, Name: "jobsets"}, Rules: []rbacv1.PolicyRule{{
				APIGroups: []string{jobsetv1alpha2.GroupVersion.Group}, Resources: []string{"jobsets"}, Verbs: []string{"create", "get", "list"}}}},
			&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: a, Name: "alice"},
				RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "jobsets"},
				Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: "alice"}}})
		rc := rest.CopyConfig(cfg.Client().RESTConfig())
		rc.Impersonate = rest.ImpersonationConfig{UserName: "alice"}
		alice, err := client.New(rc, client.Options{Scheme: framework.Scheme})
		if err != nil {
			t.Fatal(err)
		}
		// RBAC holds: alice may not create in B at all (retried while the binding propagates).
		js := mixJobSet(b, 0)
		if err := alice.Create(ctx, js); !apierrors.IsForbidden(err) {
			t.Fatalf("alice created a JobSet in %s: %v", b, err)
		}
		// Templates that name B are refused, each at its field.
		for _, tc := range []struct {
			what string
			js   func() *jobsetv1alpha2.JobSet
			path string
		}{{
			"a PVC template in B", func() *jobsetv1alpha2.JobSet {
				js := mixJobSet(a, 0)
				js.Name = "pvc-into-b"
				js.Annotations[contract.PoliciesAnnotationKey] = strings.Replace(js.Annotations[contract.PoliciesAnnotationKey],
					"{metadata: {name: data}", "{metadata: {name: data, namespace: "+b+"}", 1)
				return js
			}, "metadata.annotations[volumeclaims.jobset-addons.io/policies][0].templates[0].metadata.namespace",
		}, {
			"a claim template in B", func() *jobsetv1alpha2.JobSet {
				js := mixJobSet(a, 0)
				js.Name = "claim-into-b"
				tmpl := js.Spec.ReplicatedJobs[0].Template.Annotations
				tmpl[contract.TemplatesAnnotationKey] = strings.Replace(tmpl[contract.TemplatesAnnotationKey], "{name: dev}", "{name: dev, namespace: "+b+"}", 1)
				return js
			}, "spec.replicatedJobs[0].template.metadata.annotations[resourceclaims.jobset-addons.io/templates][0].metadata.namespace",
		}} {
			err := alice.Create(ctx, tc.js())
			paths, ok := framework.CausePaths(err)
			if !ok || !slices.Contains(paths, tc.path) {
				t.Errorf("%s: want a refusal at %s, got %v", tc.what, tc.path, err)
			}
		}
		// What alice may create makes its objects in A.
		for i := range shapes {
			js := mixJobSet(a, i)
			if err := alice.Create(ctx, js); err != nil {
				t.Fatalf("alice creating %s: %v", js.Name, err)
			}
		}
		waitAllCompleted(ctx, t, admin, a, shapes, 5*time.Minute)
		var pvcs corev1.PersistentVolumeClaimList
		var claims resourcev1.ResourceClaimList
		var vpgs volcanov1beta1.PodGroupList
		var cpgs coschedv1alpha1.PodGroupList
		for _, l := range []client.ObjectList{&pvcs, &claims, &vpgs, &cpgs} {
			if err := admin.List(ctx, l, client.InNamespace(b)); err != nil {
				t.Fatal(err)
			}
		}
		if n := len(pvcs.Items) + len(claims.Items) + len(vpgs.Items) + len(cpgs.Items); n > 0 {
			t.Errorf("%d objects appeared in %s", n, b)
		}
		inB, inA := createsIn(t, b, since), createsIn(t, a, since)
		if len(inB.made) > 0 || len(inB.lost) > 0 {
			t.Errorf("audit: the add-ons created in %s: %v (and tried %v)", b, inB.made, inB.lost)
		}
		madeA := inA.made
		if len(madeA) == 0 {
			t.Errorf("audit: the add-ons created nothing in %s", a)
		}
		t.Logf("alice: refused in %s and refused for templates naming it; %d objects made for her JobSets, all in %s, none in %s", b, len(madeA), a, b)
		return ctx
	}).Feature()
	testenv.Test(t, f)
}
