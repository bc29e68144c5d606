package addon

import (
	"context"
	"os"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// TestDroppedOnAPIServer dry-runs, on a real apiserver (envtest, on the testbed's binaries) with
// the feature gate DRAConsumableCapacity off, a claim whose device request asks for capacity
// (that gate's field): the JobSet would be admitted with the Warning naming the field. A PVC
// and a claim of many fields, which the apiserver defaults and normalises, give none, and are
// remembered.
func TestDroppedOnAPIServer(t *testing.T) {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		t.Fatal("KUBEBUILDER_ASSETS is not set: run through `make unit`, which points it at bin/testbed")
	}
	env := &envtest.Environment{}
	env.ControlPlane.GetAPIServer().Configure().Append("feature-gates", "DRAConsumableCapacity=false")
	rc, err := env.Start()
	if err != nil {
		t.Fatalf("starting envtest: %v", err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	c, err := client.New(rc, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	full := tolerating("full")
	full.Spec.Devices.Requests[0].Exactly.Selectors = []resourcev1.DeviceSelector{{CEL: &resourcev1.CELDeviceSelector{Expression: `device.driver == "gpu.example.com"`}}}
	full.Spec.Devices.Requests = append(full.Spec.Devices.Requests, resourcev1.DeviceRequest{Name: "s", FirstAvailable: []resourcev1.DeviceSubRequest{{Name: "a", DeviceClassName: "c", Count: 2}, {Name: "b", DeviceClassName: "c"}}})
	full.Spec.Devices.Constraints = []resourcev1.DeviceConstraint{{Requests: []string{"r", "s"}, MatchAttribute: ptr.To(resourcev1.FullyQualifiedName("gpu.example.com/numa"))}}
	capacity := tolerating("capacity")
	capacity.Spec.Devices.Requests[0].Exactly.Capacity = &resourcev1.CapacityRequirements{Requests: map[resourcev1.QualifiedName]resource.Quantity{"memory": resource.MustParse("1024Mi")}}
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "data"},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1024Mi")}},
			DataSource:  &corev1.TypedLocalObjectReference{Kind: "PersistentVolumeClaim", Name: "origin"},
			Selector:    &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "fast"}},
		},
	}
	for _, o := range []client.Object{full, capacity} {
		o.SetNamespace("default")
	}
	d := &DryRunner{Client: c, Name: "resourceclaims", Remember: 1 << 40}
	path := func(i int) *field.Path { return field.NewPath("metadata", "annotations").Key("k").Index(i) }
	errs, warnings := d.Check(context.Background(), []DryRun{
		{Path: path(0), What: "the ResourceClaim full", Object: full, Key: "full", TemplateSpec: true},
		{Path: path(1), What: "the ResourceClaim capacity", Object: capacity, Key: "capacity", TemplateSpec: true},
		{Path: path(2), What: "the PersistentVolumeClaim data", Object: pvc, Key: "pvc", TemplateSpec: true},
	})
	if len(errs) > 0 {
		t.Errorf("refused: %v", errs)
	}
	want := "resourceclaims: the API server dropped spec.devices.requests[0].exactly.capacity of the ResourceClaim capacity (metadata.annotations[k][1].spec.devices.requests[0].exactly.capacity): "
	if len(warnings) != 1 || !strings.HasPrefix(warnings[0], want) {
		t.Errorf("warnings %q, want one that starts %q", warnings, want)
	}
	for key, want := range map[string]bool{"full": true, "pvc": true, "capacity": false} {
		if got := d.remembered(key); got != want {
			t.Errorf("%s remembered: %v, want %v", key, got, want)
		}
	}
}
