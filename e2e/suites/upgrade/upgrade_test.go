package upgrade_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/e2e/framework"
	"github.com/jobset-addons/jobset-addons/pkg/addon/addontest"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

const (
	alpha = "scheduling.k8s.io/v1alpha3"
	beta  = "scheduling.k8s.io/v1beta1"
)

// compositeJobSet is a composite gang (podgroups.jobset-addons.io/composite) of 2 Jobs of 2
// pods each, which run for run (kwok's delay).
func compositeJobSet(ns, name, run string) *jobsetv1alpha2.JobSet {
	rj := addontest.ReplicatedJob("w").Replicas(2).Pods(2).PodAnnotation(framework.DelayAnnotationKey, run)
	return addontest.JobSet(ns, name).Annotation(contract.SchedulerAnnotationKey, string(contract.SchedulerKubernetes)).
		Annotation(contract.CompositeAnnotationKey, "true").ReplicatedJobs(rj).Obj()
}

// TestUpgradeComposite: a composite JobSet runs on Kubernetes 1.37, its CompositePodGroup at
// scheduling.k8s.io/v1alpha3, when the control plane is replaced by 1.38's (same etcd, flags
// and gates). Its pods stay bound and run on, the CompositePodGroup is the same object (same
// UID), now served at v1beta1 too, and podgroups, restarted as docs/podgroups.md asks, takes it
// as its own: no second one, no Warning, and the JobSet completes with its CompositePodGroup and
// PodGroups deleted. A composite JobSet created after the restart gets its CompositePodGroup
// written at v1beta1.
func TestUpgradeComposite(t *testing.T) {
	f := framework.NamespacedFeature("a composite gang across a control-plane upgrade 1.37 → 1.38", "runs on, one CompositePodGroup, then v1beta1", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		framework.NeedsLocalAddon(t)
		bins := os.Getenv("TESTBED_UPGRADE_BIN_DIR")
		if bins == "" {
			t.Fatal("TESTBED_UPGRADE_BIN_DIR names no testbed directory to upgrade to: run make e2e SUITE=upgrade")
		}
		tb, err := framework.DefaultConfig()
		if err != nil {
			t.Fatal(err)
		}
		c := framework.Client(t, cfg)
		ns := framework.NamespaceFrom(ctx)
		if v := serverVersion(t, cfg); !strings.HasPrefix(v, "v1.37.") {
			t.Fatalf("the testbed runs Kubernetes %s: the upgrade starts from 1.37", v)
		}
		if got := framework.CompositePodGroupVersion(t, cfg); got != alpha {
			t.Fatalf("before the upgrade CompositePodGroup is served at %q, want %s", got, alpha)
		}

		js := compositeJobSet(ns, "up", "60s")
		framework.CreateAll(ctx, t, c, js)
		defer func() {
			if t.Failed() {
				framework.DumpNamespace(ctx, t, c, ns)
			}
		}()
		before := framework.CompositePodGroup(ctx, t, c, ns, "up", alpha)
		if got := framework.WrittenAt(before, framework.AddonManager(addonName)); got != alpha {
			t.Fatalf("CompositePodGroup up written at %q (%v), want %s", got, framework.Managers(before), alpha)
		}
		waitBound(ctx, t, c, ns, js.Name, 4)

		if err := tb.ReplaceControlPlane(ctx, bins, t.Logf); err != nil {
			t.Fatal(err)
		}
		if v := serverVersion(t, cfg); !strings.HasPrefix(v, "v1.38.") {
			t.Fatalf("after the upgrade the testbed runs Kubernetes %s, want 1.38", v)
		}
		if got := framework.CompositePodGroupVersion(t, cfg); got != beta {
			t.Fatalf("after the upgrade CompositePodGroup is served at %q, want %s", got, beta)
		}
		after := framework.CompositePodGroup(ctx, t, c, ns, "up", beta)
		if after.UID != before.UID || after.Annotations[contract.PodGroupSpecHashAnnotationKey] != before.Annotations[contract.PodGroupSpecHashAnnotationKey] {
			t.Errorf("CompositePodGroup up after the upgrade: uid %s hash %s, want the same object (uid %s hash %s)",
				after.UID, after.Annotations[contract.PodGroupSpecHashAnnotationKey], before.UID, before.Annotations[contract.PodGroupSpecHashAnnotationKey])
		}
		waitBound(ctx, t, c, ns, js.Name, 4)

		// What docs/podgroups.md asks after an upgrade: restart podgroups, which then looks up
		// the CompositePodGroup version again.
		if err := framework.KillAddon(tb, addonName); err != nil {
			t.Fatal(err)
		}
		if err := framework.StartAddon(ctx, tb, addonName, func(ctx context.Context) error { return probe(ctx, c) }); err != nil {
			t.Fatal(err)
		}
		next := compositeJobSet(ns, "next", "1s")
		framework.CreateAll(ctx, t, c, next)
		n := framework.CompositePodGroup(ctx, t, c, ns, "next", beta)
		if got := framework.WrittenAt(n, framework.AddonManager(addonName)); got != beta {
			t.Errorf("CompositePodGroup next, made after the upgrade, written at %q (%v), want %s", got, framework.Managers(n), beta)
		}

		for _, j := range []*jobsetv1alpha2.JobSet{js, next} {
			framework.WaitJobSet(ctx, t, c, j, jobsetv1alpha2.JobSetCompleted)
			reasons, err := framework.EventReasons(ctx, c, j)
			if err != nil {
				t.Fatal(err)
			}
			if reasons["CompositePodGroupCreated"] != 1 {
				t.Errorf("JobSet %s: %d CompositePodGroupCreated Events, want 1: %v", j.Name, reasons["CompositePodGroupCreated"], reasons)
			}
			var events corev1.EventList
			if err := c.List(ctx, &events, client.InNamespace(ns)); err != nil {
				t.Fatal(err)
			}
			for _, e := range events.Items {
				if e.InvolvedObject.UID == j.UID && e.Type == corev1.EventTypeWarning {
					t.Errorf("JobSet %s: Warning %s: %s", j.Name, e.Reason, e.Message)
				}
			}
		}
		framework.WaitCompositeGangsGone(ctx, t, c, ns, beta)
		return ctx
	})
	testenv.Test(t, f)
}

// serverVersion is the apiserver's gitVersion.
func serverVersion(t *testing.T, cfg *envconf.Config) string {
	t.Helper()
	dc, err := discovery.NewDiscoveryClientForConfig(cfg.Client().RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	v, err := dc.ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	return v.GitVersion
}

// waitBound waits until the JobSet's n pods are all bound to a node and none is done.
func waitBound(ctx context.Context, t *testing.T, c client.Client, ns, jobSet string, n int) {
	t.Helper()
	framework.Eventually(ctx, t, 2*time.Minute, fmt.Sprintf("%d pods of %s bound and running", n, jobSet), func(ctx context.Context) (bool, string, error) {
		var pods corev1.PodList
		if err := c.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{jobsetv1alpha2.JobSetNameKey: jobSet}); err != nil {
			return false, err.Error(), nil
		}
		bound := 0
		for _, p := range pods.Items {
			if p.Spec.NodeName != "" && p.Status.Phase == corev1.PodRunning {
				bound++
			}
		}
		return bound == n, fmt.Sprintf("%d of %d pods bound and running", bound, len(pods.Items)), nil
	})
}
