package framework

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/e2e/repo"
)

type namespaceKey struct{}

// Namespace is a feature setup step: it creates a namespace of its own for the feature.
func Namespace(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: envconf.RandomName("e2e", 12)}}
	if err := Client(t, cfg).Create(ctx, ns); err != nil {
		t.Fatalf("creating namespace: %v", err)
	}
	return context.WithValue(ctx, namespaceKey{}, ns.Name)
}

// NamespaceFrom returns the namespace Namespace made.
func NamespaceFrom(ctx context.Context) string {
	ns, _ := ctx.Value(namespaceKey{}).(string)
	return ns
}

// DeleteNamespace is a feature teardown step for the namespace Namespace made.
func DeleteNamespace(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: NamespaceFrom(ctx)}}
	if err := Client(t, cfg).Delete(ctx, ns); client.IgnoreNotFound(err) != nil {
		t.Errorf("deleting namespace %s: %v", ns.Name, err)
	}
	return ctx
}

// WaitPodRunning waits until pod runs, and leaves its latest state in pod.
func WaitPodRunning(ctx context.Context, t *testing.T, c client.Client, pod *corev1.Pod) {
	t.Helper()
	Eventually(ctx, t, time.Minute, fmt.Sprintf("pod %s Running", pod.Name), func(ctx context.Context) (bool, string, error) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(pod), pod); err != nil {
			return false, err.Error(), nil
		}
		return pod.Status.Phase == corev1.PodRunning, fmt.Sprintf("phase %s, conditions %+v", pod.Status.Phase, pod.Status.Conditions), nil
	})
}

// NamespacedFeature is a feature of one assessment, run in a namespace of its own that is
// deleted afterwards.
func NamespacedFeature(name, assessment string, fn features.Func) features.Feature {
	return features.New(name).WithSetup("namespace", Namespace).Assess(assessment, fn).Teardown(DeleteNamespace).Feature()
}

// WaitJobSet waits until js has condition cond, and leaves its latest state in js.
func WaitJobSet(ctx context.Context, t *testing.T, c client.Client, js *jobsetv1alpha2.JobSet, cond jobsetv1alpha2.JobSetConditionType) {
	t.Helper()
	Eventually(ctx, t, 2*time.Minute, fmt.Sprintf("JobSet %s %s", js.Name, cond), func(ctx context.Context) (bool, string, error) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(js), js); err != nil {
			return false, err.Error(), nil
		}
		return apimeta.IsStatusConditionTrue(js.Status.Conditions, string(cond)), fmt.Sprintf("conditions %+v", js.Status.Conditions), nil
	})
}

// AddonsStatus runs the kubectl plugin bin/kubectl-jobset_addons (`make build`) on the JobSet
// ns/name and returns what it printed.
func AddonsStatus(ctx context.Context, t *testing.T, cfg *envconf.Config, ns, name string) string {
	t.Helper()
	return AddonsStatusAt(ctx, t, cfg.KubeconfigFile(), ns, name)
}

// AddonsStatusAt is AddonsStatus on the cluster of the kubeconfig file.
func AddonsStatusAt(ctx context.Context, t *testing.T, kubeconfig, ns, name string) string {
	t.Helper()
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, filepath.Join(root, "bin", "kubectl-jobset_addons"), "status", "--kubeconfig", kubeconfig, "-n", ns, name)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl jobset-addons status %s/%s: %v\n%s", ns, name, err, out)
	}
	return string(out)
}
