package controller

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/jobset-addons/jobset-addons/pkg/addon/checks/volumeclaims"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// TestAdoptLeavesTheCachedObject: adopt writes what an earlier JobSet's PVC lacks through a
// copy, never changing the object it is given (the cache's own), and writes nothing for a PVC
// that has all of it.
func TestAdoptLeavesTheCachedObject(t *testing.T) {
	js := jobSet(true).Obj()
	c := volumeclaims.Claim{Name: "data-train", Retention: contract.VolumeRetentionPolicy{WhenDeleted: contract.RetentionPolicyDelete}}
	earlier := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "data-train",
		Annotations: map[string]string{contract.VolumeClaimJobSetUIDAnnotationKey: "uid-0"}}}
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	patches := 0
	cl := fake.NewClientBuilder().WithScheme(scheme).WithObjects(earlier.DeepCopy()).WithInterceptorFuncs(interceptor.Funcs{
		Patch: func(ctx context.Context, cl client.WithWatch, o client.Object, p client.Patch, opts ...client.PatchOption) error {
			patches++
			return cl.Patch(ctx, o, p, opts...)
		},
	}).Build()
	r := &Reconciler{Client: cl}

	cached := earlier.DeepCopy()
	fromEarlier, err := r.adopt(context.Background(), js, c, cached)
	if err != nil || !fromEarlier || patches != 1 {
		t.Fatalf("an earlier JobSet's PVC: fromEarlier %v, %d patches, err %v; want true, 1, nil", fromEarlier, patches, err)
	}
	if diff := cmp.Diff(earlier, cached); diff != "" {
		t.Errorf("adopt changed the object it was given (-before +after):\n%s", diff)
	}
	var now corev1.PersistentVolumeClaim
	if err := cl.Get(context.Background(), client.ObjectKeyFromObject(earlier), &now); err != nil {
		t.Fatal(err)
	}
	if now.Annotations[contract.VolumeClaimJobSetUIDAnnotationKey] != string(js.UID) || !ownedBy(&now, js) {
		t.Errorf("adopted PVC: annotations %v, owners %v; want the JobSet's UID and an owner reference to it", now.Annotations, now.OwnerReferences)
	}

	fromEarlier, err = r.adopt(context.Background(), js, c, &now)
	if err != nil || fromEarlier || patches != 1 {
		t.Errorf("a PVC adopted already: fromEarlier %v, %d patches in all, err %v; want false, still 1, nil", fromEarlier, patches, err)
	}
}
