package kind_test

import (
	"context"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/e2e/framework"
	"github.com/jobset-addons/jobset-addons/e2e/kindbed"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// TestHelmLifecycle: helm upgrade with a changed value, one add-on turned off, helm uninstall,
// each leaving what docs/install.md says; the chart is installed again at the end, with the
// JobSets made in between still served.
func TestHelmLifecycle(t *testing.T) {
	f := framework.NamespacedFeature("helm", "upgrade, one toggle off, uninstall, install again", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		c := framework.Client(t, cfg)
		ns := framework.NamespaceFrom(ctx)
		// Whatever happens below, the chart is left installed as the suite installed it.
		defer func() {
			if err := kb.HelmUpgrade(ctx, "--install"); err != nil {
				t.Errorf("installing the chart again: %v", err)
			}
		}()

		// 1. A changed value rolls that Deployment; the add-on keeps working.
		if err := kb.HelmUpgrade(ctx, "--set", "sequencer.logLevel=debug"); err != nil {
			t.Fatal(err)
		}
		var dep appsv1.Deployment
		if err := c.Get(ctx, client.ObjectKey{Namespace: kindbed.AddonsNamespace, Name: "jobset-addons-sequencer"}, &dep); err != nil {
			t.Fatal(err)
		}
		if args := strings.Join(dep.Spec.Template.Spec.Containers[0].Args, " "); !strings.Contains(args, "--log-level=debug") {
			t.Errorf("sequencer args after the upgrade: %s, want --log-level=debug", args)
		}
		inOrder := func(name string) *jobsetv1alpha2.JobSet {
			return kindbed.JobSet(ns, name, map[string]string{contract.ExecutionPolicyAnnotationKey: "InOrder"}, 0,
				kindbed.ReplicatedJob("first", 1, 1, "sleep 1"), kindbed.ReplicatedJob("second", 1, 1, "true"))
		}
		upgraded := inOrder("after-upgrade")
		if err := c.Create(ctx, upgraded); err != nil {
			t.Fatal(err)
		}
		framework.WaitJobSet(ctx, t, c, upgraded, jobsetv1alpha2.JobSetCompleted)

		// 2. podgroups off: its Deployment, RBAC and webhooks go; the other three keep working.
		if err := kb.HelmUpgrade(ctx, "--set", "sequencer.logLevel=debug", "--set", "podgroups.enabled=false"); err != nil {
			t.Fatal(err)
		}
		if left := chartObjects(ctx, t, c, "podgroups"); len(left) > 0 {
			t.Errorf("podgroups turned off, but left: %v", left)
		}
		for _, name := range []string{"volumeclaims", "resourceclaims", "sequencer"} {
			if len(chartObjects(ctx, t, c, name)) == 0 {
				t.Errorf("%s lost its objects when podgroups was turned off", name)
			}
		}
		withPVC := kindbed.JobSet(ns, "without-podgroups", map[string]string{
			contract.ExecutionPolicyAnnotationKey: "InOrder",
			contract.PoliciesAnnotationKey:        `[{templates: [{metadata: {name: data}, spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 8Mi}}}}], retentionPolicy: {whenComplete: Retain}}]`,
		}, 0, kindbed.ReplicatedJob("first", 1, 1, "echo kept >/data/f", "data"), kindbed.ReplicatedJob("second", 1, 1, "cat /data/f", "data"))
		if err := c.Create(ctx, withPVC); err != nil {
			t.Fatal(err)
		}
		framework.WaitJobSet(ctx, t, c, withPVC, jobsetv1alpha2.JobSetCompleted)

		// A sequenced JobSet whose second stage is still gated when the chart goes.
		gated := kindbed.JobSet(ns, "gated", map[string]string{contract.ExecutionPolicyAnnotationKey: "InOrder"}, 0,
			kindbed.ReplicatedJob("first", 1, 1, "while [ ! -f /tmp/done ]; do sleep 0.2; done"), kindbed.ReplicatedJob("second", 1, 1, "true"))
		if err := c.Create(ctx, gated); err != nil {
			t.Fatal(err)
		}
		waitPods(ctx, t, c, gated, 1, "of the second stage gated", time.Minute, func(p *corev1.Pod) bool {
			return p.Labels[contract.ReplicatedJobNameLabelKey] == "second" && len(p.Spec.SchedulingGates) == 1
		})

		// 3. Uninstall: the controllers and webhooks go; PVCs and gated pods stay.
		if err := kb.HelmUninstall(ctx); err != nil {
			t.Fatal(err)
		}
		for _, name := range addons {
			if left := chartObjects(ctx, t, c, name); len(left) > 0 {
				t.Errorf("after helm uninstall, %s left: %v", name, left)
			}
		}
		if n := len(pvcUIDs(ctx, t, c, withPVC)); n != 1 {
			t.Errorf("after helm uninstall, %d PVCs of %s, want its retained one", n, withPVC.Name)
		}
		first := waitPods(ctx, t, c, gated, 1, "of the first stage running", time.Minute, func(p *corev1.Pod) bool {
			return p.Labels[contract.ReplicatedJobNameLabelKey] == "first" && running(p)
		})
		if _, err := kb.Kubectl(ctx, nil, "-n", ns, "exec", first[0].Name, "-c", "work", "--", "touch", "/tmp/done"); err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Second)
		for _, p := range pods(ctx, t, c, gated) {
			if p.Labels[contract.ReplicatedJobNameLabelKey] == "second" && (len(p.Spec.SchedulingGates) != 1 || p.Spec.NodeName != "") {
				t.Errorf("with no sequencer, pod %s of the second stage left its gate: gates %v, node %q", p.Name, p.Spec.SchedulingGates, p.Spec.NodeName)
			}
		}

		// 4. Installed again: the gated JobSet is picked up where it stood and completes.
		if err := kb.HelmUpgrade(ctx, "--install"); err != nil {
			t.Fatal(err)
		}
		framework.WaitJobSet(ctx, t, c, gated, jobsetv1alpha2.JobSetCompleted)
		return ctx
	})
	testenv.Test(t, f)
}

// chartObjects lists what the chart made for the add-on name: its Deployment, ServiceAccount,
// Services, RBAC and webhook configurations.
func chartObjects(ctx context.Context, t *testing.T, c client.Client, name string) []string {
	t.Helper()
	sel := client.MatchingLabels{"app.kubernetes.io/instance": kindbed.Release, "app.kubernetes.io/component": name}
	var found []string
	for _, gvk := range []schema.GroupVersionKind{
		appsv1.SchemeGroupVersion.WithKind("DeploymentList"), corev1.SchemeGroupVersion.WithKind("ServiceAccountList"),
		corev1.SchemeGroupVersion.WithKind("ServiceList"), rbacv1.SchemeGroupVersion.WithKind("ClusterRoleList"),
		rbacv1.SchemeGroupVersion.WithKind("ClusterRoleBindingList"), rbacv1.SchemeGroupVersion.WithKind("RoleList"),
		rbacv1.SchemeGroupVersion.WithKind("RoleBindingList"),
		admissionregistrationv1.SchemeGroupVersion.WithKind("MutatingWebhookConfigurationList"),
		admissionregistrationv1.SchemeGroupVersion.WithKind("ValidatingWebhookConfigurationList"),
	} {
		var l metav1.PartialObjectMetadataList
		l.SetGroupVersionKind(gvk)
		if err := c.List(ctx, &l, sel); err != nil {
			t.Fatalf("listing %s: %v", gvk.Kind, err)
		}
		for _, o := range l.Items {
			found = append(found, strings.TrimSuffix(gvk.Kind, "List")+"/"+o.Name)
		}
	}
	return found
}
