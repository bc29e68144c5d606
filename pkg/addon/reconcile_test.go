package addon

import (
	"context"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

func managedJobSet(managedBy *string) *jobsetv1alpha2.JobSet {
	return &jobsetv1alpha2.JobSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "js", UID: "uid-js", Labels: map[string]string{"l": "v"}, Annotations: map[string]string{
			contract.PoliciesAnnotationKey: "[]", contract.SchedulerAnnotationKey: "volcano", "kueue.x-k8s.io/queue-name": "q",
		}},
		Spec: jobsetv1alpha2.JobSetSpec{ManagedBy: managedBy, ReplicatedJobs: []jobsetv1alpha2.ReplicatedJob{{
			Name: "w", Replicas: 1, Template: batchv1.JobTemplateSpec{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{contract.TemplatesAnnotationKey: "[]"}}},
		}}},
		Status: jobsetv1alpha2.JobSetStatus{Restarts: 1},
	}
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
