package addon

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/pkg/addon/addontest"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// managedJobSet is a JobSet that uses three add-ons and Kueue, in restart attempt 1, with
// spec.managedBy (nil: unset).
func managedJobSet(managedBy *string) *jobsetv1alpha2.JobSet {
	js := addontest.JobSet("ns", "js").UID("uid-js").Label("l", "v").
		Annotate(contract.PoliciesAnnotationKey, "[]", contract.SchedulerAnnotationKey, "volcano", "kueue.x-k8s.io/queue-name", "q").
		ReplicatedJobs(addontest.ReplicatedJob("w").JobAnnotation(contract.TemplatesAnnotationKey, "[]")).
		Restarts(1).Obj()
	js.Spec.ManagedBy = managedBy
	return js
}

func TestReconcileJobSet(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := jobsetv1alpha2.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	deleting := managedJobSet(nil)
	deleting.Name, deleting.Finalizers, deleting.DeletionTimestamp = "deleting", []string{"x"}, ptr.To(metav1.Now())
	elsewhere := managedJobSet(ptr.To("kueue.x-k8s.io/multikueue"))
	elsewhere.Name = "elsewhere"
	own := managedJobSet(ptr.To(contract.JobSetControllerManagedBy))
	own.Name = "own"
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(managedJobSet(nil), deleting, elsewhere, own).Build()
	for name, want := range map[string]struct{ found, ok bool }{
		"gone": {}, "deleting": {found: true}, "elsewhere": {found: true}, "own": {found: true, ok: true}, "js": {found: true, ok: true},
	} {
		_, js, ok, err := ReconcileJobSet(context.Background(), c, types.NamespacedName{Namespace: "ns", Name: name})
		if err != nil || (js != nil) != want.found || ok != want.ok {
			t.Errorf("%s: JobSet found %v, ok %v, err %v; want found %v, ok %v, no error", name, js != nil, ok, err, want.found, want.ok)
		}
	}
}
