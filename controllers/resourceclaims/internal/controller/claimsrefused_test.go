package controller

import (
	"context"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/tools/events"
	"k8s.io/component-base/featuregate"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/jobset-addons/jobset-addons/controllers/resourceclaims/internal/claims"
)

// TestRefusedToldOnce: claims the API server refuses for good (as after an upgrade that no
// longer accepts their template) are told of in one Warning per template and cause, on the
// first reconcile only, not as ResourceClaimsFailed; every reconcile returns an error, for the
// back-off.
func TestRefusedToldOnce(t *testing.T) {
	js := devJobSet(3).Obj()
	c := cacheBuilder(testScheme(t)).WithObjects(js).WithInterceptorFuncs(interceptor.Funcs{
		Create: func(_ context.Context, _ client.WithWatch, obj client.Object, _ ...client.CreateOption) error {
			return apierrors.NewInvalid(schema.GroupKind{Group: "resource.k8s.io", Kind: "ResourceClaim"}, obj.GetName(), field.ErrorList{
				field.Invalid(field.NewPath("spec", "devices", "requests").Index(0).Child("exactly", "count"), 0, "must be greater than zero"),
			})
		},
	}).Build()
	gates := featuregate.NewFeatureGate()
	if err := gates.Add(claims.Gates); err != nil {
		t.Fatal(err)
	}
	rec := events.NewFakeRecorder(100)
	r := &Reconciler{Client: c, APIReader: c, Adopter: c, Recorder: rec, Gates: gates, Workers: 2}
	for i := range 3 {
		_, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "js"}})
		if err == nil || !strings.Contains(err.Error(), "the API server refuses ResourceClaims: template dev") {
			t.Errorf("reconcile %d: %v, want the refusal as an error", i, err)
		}
	}
	close(rec.Events)
	var got []string
	for e := range rec.Events {
		got = append(got, e)
	}
	if len(got) != 1 || !strings.Contains(got[0], ReasonRefused) || !strings.Contains(got[0], "template dev (3, such as js-w-") {
		t.Errorf("events %q, want one %s", got, ReasonRefused)
	}
}
