package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
)

// multiKueueManagedBy is the spec.managedBy MultiKueue's manager cluster gives the JobSets it
// sends to a worker cluster (Kueue's MultiKueueControllerName).
const multiKueueManagedBy = "kueue.x-k8s.io/multikueue"

// kueueWorkloadList is Kueue's Workload list (kueue.x-k8s.io/v1beta2), read unstructured: the
// plugin does not depend on Kueue's API module.
var kueueWorkloadList = schema.GroupVersionKind{Group: "kueue.x-k8s.io", Version: "v1beta2", Kind: "WorkloadList"}

// managedElsewhere prints, for a JobSet whose spec.managedBy names another controller, who
// manages it and where its objects are: the add-ons here make nothing for it (the rule "Whose
// JobSet" of pkg/contract). For MultiKueue, the worker cluster it runs in, from its Kueue
// Workload in this cluster (status.clusterName, else the cluster the MultiKueue admission check's
// message names: `The workload got reservation on "worker1"`).
func managedElsewhere(ctx context.Context, c client.Client, w io.Writer, js *jobsetv1alpha2.JobSet) {
	by := *js.Spec.ManagedBy
	fmt.Fprintf(w, "Managed by %s, not JobSet's own controller: the add-ons in this cluster make nothing for it.\n", by)
	if by != multiKueueManagedBy {
		fmt.Fprintf(w, "Its PVCs, ResourceClaims, gated pods and PodGroups are wherever %s runs it.\n", by)
		return
	}
	where := multiKueueWorker(ctx, c, js)
	if where == "" {
		fmt.Fprintln(w, "MultiKueue has not placed it on a worker cluster yet; there its PVCs, ResourceClaims, gated pods and PodGroups will live.")
		return
	}
	fmt.Fprintf(w, "MultiKueue runs it in the worker cluster %s: its PVCs, ResourceClaims, gated pods and PodGroups live there (run this command against that cluster); the status here is MultiKueue's copy of the worker's.\n", where)
}

// multiKueueWorker is the worker cluster of js's Kueue Workload, or "" when none is known (no
// Workload, Kueue not served, not placed yet).
func multiKueueWorker(ctx context.Context, c client.Client, js *jobsetv1alpha2.JobSet) string {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(kueueWorkloadList)
	if err := c.List(ctx, list, client.InNamespace(js.Namespace)); err != nil {
		return "" // Kueue not served, or not readable: where it runs is not known here
	}
	for _, wl := range list.Items {
		owned := false
		for _, r := range wl.GetOwnerReferences() {
			owned = owned || r.UID == js.UID
		}
		if !owned {
			continue
		}
		if name, _, _ := unstructured.NestedString(wl.Object, "status", "clusterName"); name != "" {
			return name
		}
		checks, _, _ := unstructured.NestedSlice(wl.Object, "status", "admissionChecks")
		for _, ch := range checks {
			m, _ := ch.(map[string]any)
			msg, _ := m["message"].(string)
			if _, rest, ok := strings.Cut(msg, `"`); ok && m["state"] == "Ready" {
				if name, _, ok := strings.Cut(rest, `"`); ok {
					return name
				}
			}
		}
	}
	return ""
}
