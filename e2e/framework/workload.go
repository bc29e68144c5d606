package framework

import (
	"context"
	"fmt"
	"testing"
	"time"

	schedulingv1alpha3 "k8s.io/api/scheduling/v1alpha3"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
)

// WorkloadAPIServed tells whether the apiserver serves the Workload API (Workload and PodGroup
// of scheduling.k8s.io/v1beta1: Kubernetes 1.37 with GenericWorkload), which podgroups'
// kubernetes backend needs.
func WorkloadAPIServed(t *testing.T, cfg *envconf.Config) bool {
	t.Helper()
	return Served(t, cfg, schedulingv1beta1.SchemeGroupVersion.String(), "workloads", "podgroups")
}

// CompositePodGroupVersion is the version of scheduling.k8s.io at which podgroups writes a
// composite gang's CompositePodGroup: v1beta1 where the apiserver serves it there (Kubernetes
// 1.38), else v1alpha3 (1.37); "" where neither (the CompositePodGroup gate off).
func CompositePodGroupVersion(t *testing.T, cfg *envconf.Config) string {
	t.Helper()
	for _, gv := range []string{"scheduling.k8s.io/v1beta1", "scheduling.k8s.io/v1alpha3"} {
		if Served(t, cfg, gv, "compositepodgroups") {
			return gv
		}
	}
	return ""
}

// Served tells whether the apiserver serves every one of resources at group version gv.
func Served(t *testing.T, cfg *envconf.Config, gv string, resources ...string) bool {
	t.Helper()
	dc, err := discovery.NewDiscoveryClientForConfig(cfg.Client().RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	l, err := dc.ServerResourcesForGroupVersion(gv)
	if apierrors.IsNotFound(err) {
		return false
	} else if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, r := range l.APIResources {
		have[r.Name] = true
	}
	for _, r := range resources {
		if !have[r] {
			return false
		}
	}
	return true
}

// RequireWorkloadAPI skips a kubernetes case where the Workload API is not served (a testbed of
// Kubernetes before 1.37 in make e2e SUITE=compat), saying so: n/a there, never passed.
func RequireWorkloadAPI(t *testing.T, cfg *envconf.Config) {
	t.Helper()
	if !WorkloadAPIServed(t, cfg) {
		t.Skip("n/a: the apiserver does not serve the Workload API (scheduling.k8s.io/v1beta1 Workload and PodGroup: Kubernetes 1.37 with the GenericWorkload gate)")
	}
}

// CompositePodGroup waits for the CompositePodGroup of that name, read at version (a
// scheduling.k8s.io group version: the fields are the same at v1beta1 and v1alpha3), and
// returns it.
func CompositePodGroup(ctx context.Context, t *testing.T, c client.Client, ns, name, version string) *schedulingv1alpha3.CompositePodGroup {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(version)
	u.SetKind("CompositePodGroup")
	Eventually(ctx, t, time.Minute, "CompositePodGroup "+name, func(ctx context.Context) (bool, string, error) {
		err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, u)
		return err == nil, fmt.Sprint(err), nil
	})
	cpg := &schedulingv1alpha3.CompositePodGroup{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, cpg); err != nil {
		t.Fatal(err)
	}
	return cpg
}

// AddonManager is the field manager of add-on name's writes (its client's user agent).
func AddonManager(name string) string { return "jobset-addons-" + name }

// WrittenAt is the apiVersion at which manager wrote o, from o's managedFields, or "" when it
// wrote none of it.
func WrittenAt(o client.Object, manager string) string {
	for _, mf := range o.GetManagedFields() {
		if mf.Manager == manager {
			return mf.APIVersion
		}
	}
	return ""
}

// Managers lists o's managedFields entries as manager:operation@apiVersion.
func Managers(o client.Object) []string {
	var out []string
	for _, mf := range o.GetManagedFields() {
		out = append(out, fmt.Sprintf("%s:%s@%s", mf.Manager, mf.Operation, mf.APIVersion))
	}
	return out
}

// WaitCompositeGangsGone waits, for a minute at most, until namespace ns holds no
// CompositePodGroup (read at version, e.g. scheduling.k8s.io/v1beta1) and no PodGroup.
func WaitCompositeGangsGone(ctx context.Context, t *testing.T, c client.Client, ns, version string) {
	t.Helper()
	Eventually(ctx, t, time.Minute, "CompositePodGroups and PodGroups deleted", func(ctx context.Context) (bool, string, error) {
		var cpgs unstructured.UnstructuredList
		cpgs.SetAPIVersion(version)
		cpgs.SetKind("CompositePodGroupList")
		var pgs schedulingv1beta1.PodGroupList
		if err := c.List(ctx, &cpgs, client.InNamespace(ns)); err != nil {
			return false, err.Error(), nil
		}
		if err := c.List(ctx, &pgs, client.InNamespace(ns)); err != nil {
			return false, err.Error(), nil
		}
		return len(cpgs.Items) == 0 && len(pgs.Items) == 0, fmt.Sprintf("%d CompositePodGroups, %d PodGroups", len(cpgs.Items), len(pgs.Items)), nil
	})
}
