package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
)

// TestManagedElsewhere: the status of a JobSet managed elsewhere names its controller and, for
// MultiKueue, the worker cluster its Workload runs in, from status.clusterName or the admission
// check's message.
func TestManagedElsewhere(t *testing.T) {
	js := func(by string) *jobsetv1alpha2.JobSet {
		return &jobsetv1alpha2.JobSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "train", UID: "js-uid"},
			Spec: jobsetv1alpha2.JobSetSpec{ManagedBy: ptr.To(by)}}
	}
	workload := func(status map[string]any) client.Object {
		wl := &unstructured.Unstructured{Object: map[string]any{"status": status}}
		wl.SetGroupVersionKind(kueueWorkloadList.GroupVersion().WithKind("Workload"))
		wl.SetNamespace("ns")
		wl.SetName("jobset-train")
		wl.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "jobset.x-k8s.io/v1alpha2", Kind: "JobSet", Name: "train", UID: "js-uid"}})
		return wl
	}
	for _, tc := range []struct {
		name string
		objs []client.Object
		by   string
		want []string
	}{
		{"other controller", nil, "example.com/mine", []string{"Managed by example.com/mine", "wherever example.com/mine runs it"}},
		{"MultiKueue, not placed", nil, multiKueueManagedBy, []string{"Managed by kueue.x-k8s.io/multikueue", "has not placed it on a worker cluster yet"}},
		{"MultiKueue, clusterName", []client.Object{workload(map[string]any{"clusterName": "worker1"})}, multiKueueManagedBy,
			[]string{"runs it in the worker cluster worker1: its PVCs"}},
		{"MultiKueue, admission check", []client.Object{workload(map[string]any{"admissionChecks": []any{
			map[string]any{"name": "mk", "state": "Ready", "message": `The workload got reservation on "worker2"`}}})}, multiKueueManagedBy,
			[]string{"runs it in the worker cluster worker2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := js(tc.by)
			c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(append(tc.objs, j)...).Build()
			var out bytes.Buffer
			if err := Status(context.Background(), c, "ns", "train", 0, &out); err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("status says\n%s\nwant it to say %q", out.String(), w)
				}
			}
		})
	}
}
