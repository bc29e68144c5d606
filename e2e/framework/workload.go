package framework

import (
	"testing"

	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
)

// WorkloadAPIServed tells whether the apiserver serves the Workload API (Workload and PodGroup
// of scheduling.k8s.io/v1beta1: Kubernetes 1.37 with GenericWorkload), which podgroups'
// kubernetes backend needs.
func WorkloadAPIServed(t *testing.T, cfg *envconf.Config) bool {
	t.Helper()
	dc, err := discovery.NewDiscoveryClientForConfig(cfg.Client().RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	l, err := dc.ServerResourcesForGroupVersion(schedulingv1beta1.SchemeGroupVersion.String())
	if apierrors.IsNotFound(err) {
		return false
	} else if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, r := range l.APIResources {
		have[r.Name] = true
	}
	return have["workloads"] && have["podgroups"]
}

// RequireWorkloadAPI skips a kubernetes case where the Workload API is not served (a testbed of
// Kubernetes before 1.37 in make e2e SUITE=compat), saying so: n/a there, never passed.
func RequireWorkloadAPI(t *testing.T, cfg *envconf.Config) {
	t.Helper()
	if !WorkloadAPIServed(t, cfg) {
		t.Skip("n/a: the apiserver does not serve the Workload API (scheduling.k8s.io/v1beta1 Workload and PodGroup: Kubernetes 1.37 with the GenericWorkload gate)")
	}
}
