package volumeclaims_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/e2e/framework"
)

// The cases of a node that is not lost by name, or only unreachable: nothing is given up unless
// the node is gone, marked out of service, or the user opted in.

const scratchOf = "scratch-%s-w-0-0"

func clientset(t *testing.T, cfg *envconf.Config) kubernetes.Interface {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cfg.Client().RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// startOnPool creates js and returns its running pod and its scratch PVC's UID and PV.
func startOnPool(ctx context.Context, t *testing.T, c client.Client, js *jobsetv1alpha2.JobSet) (corev1.Pod, [2]string) {
	t.Helper()
	framework.CreateAll(ctx, t, c, js)
	scratch := fmt.Sprintf(scratchOf, js.Name)
	pod := runningPod(ctx, t, c, js.Namespace, js.Name, time.Minute)
	return pod, boundPVCs(ctx, t, c, js.Namespace, scratch)[scratch]
}

// keptFor checks, every half second for d, that pod is there and not being deleted, and that
// the scratch PVC is still the one of uid.
func keptFor(ctx context.Context, t *testing.T, c client.Client, js *jobsetv1alpha2.JobSet, pod *corev1.Pod, uid string, d time.Duration) {
	t.Helper()
	scratch := fmt.Sprintf(scratchOf, js.Name)
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(500 * time.Millisecond) {
		var pvc corev1.PersistentVolumeClaim
		if err := c.Get(ctx, types.NamespacedName{Namespace: js.Namespace, Name: scratch}, &pvc); err != nil || string(pvc.UID) != uid || !pvc.DeletionTimestamp.IsZero() {
			t.Fatalf("PVC %s was deleted or replaced (%v)", scratch, err)
		}
		if pod == nil {
			continue
		}
		var p corev1.Pod
		if err := c.Get(ctx, client.ObjectKeyFromObject(pod), &p); err != nil || p.UID != pod.UID || !p.DeletionTimestamp.IsZero() {
			t.Fatalf("pod %s on the node was deleted (%v)", pod.Name, err)
		}
	}
	if got, err := framework.EventReasons(ctx, c, js); err != nil || got["VolumeClaimNodeLost"] > 0 {
		t.Fatalf("VolumeClaimNodeLost told (%v, %v)", got, err)
	}
}

// recreatedOnOther waits, within d, for the Job's replacement pod on another node than pod's,
// with a new scratch PVC bound there, and for the VolumeClaimNodeLost Event; it returns that
// Event's message.
func recreatedOnOther(ctx context.Context, t *testing.T, c client.Client, js *jobsetv1alpha2.JobSet, pod corev1.Pod, before [2]string, d time.Duration) string {
	t.Helper()
	scratch := fmt.Sprintf(scratchOf, js.Name)
	again := runningPod(ctx, t, c, js.Namespace, js.Name, d, pod.UID)
	after := boundPVCs(ctx, t, c, js.Namespace, scratch)[scratch]
	if again.Spec.NodeName == pod.Spec.NodeName || after[0] == before[0] || after[1] != "pv-"+again.Spec.NodeName {
		t.Errorf("want a new PVC on the other node: pod on %s, PVC %s before %v, after %v", again.Spec.NodeName, scratch, before, after)
	}
	expectEvents(ctx, t, c, js, "VolumeClaimNodeLost")
	msgs, err := framework.EventMessages(ctx, c, js, "VolumeClaimNodeLost")
	if err != nil || len(msgs) == 0 {
		t.Fatalf("no VolumeClaimNodeLost message: %v", err)
	}
	t.Logf("VolumeClaimNodeLost: %s", msgs[0])
	return msgs[0]
}

// waitEvent waits within d for an Event of reason on js and returns its message.
func waitEvent(ctx context.Context, t *testing.T, c client.Client, js *jobsetv1alpha2.JobSet, reason string, d time.Duration) string {
	t.Helper()
	var msg string
	framework.Eventually(ctx, t, d, reason, func(ctx context.Context) (bool, string, error) {
		msgs, err := framework.EventMessages(ctx, c, js, reason)
		if err != nil || len(msgs) == 0 {
			got, _ := framework.EventReasons(ctx, c, js)
			return false, fmt.Sprint(got, err), nil
		}
		msg = msgs[0]
		return true, "", nil
	})
	t.Logf("%s: %s", reason, msg)
	return msg
}

// TestNodeHostnameNotName: a Ready node whose kubernetes.io/hostname label is not its name
// (gpu-7 labelled gpu-7.example.internal), with the local PV pinned to that label: nothing is
// given up while it is there; once it is deleted, whenNodeLost: Recreate gives the pod a new PVC
// on the other node.
func TestNodeHostnameNotName(t *testing.T) {
	f := framework.NamespacedFeature("whenNodeLost by hostname label", "a node named otherwise than its hostname is not lost", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		c := framework.Client(t, cfg)
		ns := framework.NamespaceFrom(ctx)
		pool := newLocalPoolAs(ctx, t, cfg, c, "nl-host", 2, ".example.internal")
		js := nodeLostJobSet(ns, "host", pool, "Recreate")
		pod, before := startOnPool(ctx, t, c, js)
		keptFor(ctx, t, c, js, &pod, before[0], 15*time.Second)
		if err := c.Delete(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: pod.Spec.NodeName}}); err != nil {
			t.Fatal(err)
		}
		msg := recreatedOnOther(ctx, t, c, js, pod, before, 45*time.Second)
		if want := "kubernetes.io/hostname=" + pod.Spec.NodeName + ".example.internal"; !strings.Contains(msg, want) {
			t.Errorf("VolumeClaimNodeLost %q does not name %s", msg, want)
		}
		return ctx
	})
	testenv.Test(t, f)
}

// TestNodeUnreachableKept: a partition. The pod's node stops answering (NotReady, tainted
// unreachable an hour ago by its taint's clock) while the JobSet's pod and a second pod still
// show Running there. With whenNodeLost: Recreate but no opt-in for unreachable nodes, past the
// grace a VolumeClaimNodeUnreachable Warning says the data is kept and how to mark the machine
// down; no pod is deleted and the PVC stays.
func TestNodeUnreachableKept(t *testing.T) {
	f := framework.NamespacedFeature("whenNodeLost and a partition", "an unreachable node: a Warning, no force delete, the data kept", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		c := framework.Client(t, cfg)
		ns := framework.NamespaceFrom(ctx)
		pool := newLocalPool(ctx, t, cfg, c, "nl-part", 2)
		js := nodeLostJobSet(ns, "part", pool, "Recreate")
		pod, before := startOnPool(ctx, t, c, js)
		second := forgedPodOn(ctx, t, c, js, pod)
		runningPod(ctx, t, c, ns, js.Name, 30*time.Second, pod.UID) // the second pod Running too
		if err := framework.PartitionNode(ctx, clientset(t, cfg), pod.Spec.NodeName, time.Now().Add(-time.Hour)); err != nil {
			t.Fatal(err)
		}
		msg := waitEvent(ctx, t, c, js, "VolumeClaimNodeUnreachable", nodeLostGrace+30*time.Second)
		if !strings.Contains(msg, "node.kubernetes.io/out-of-service") {
			t.Errorf("VolumeClaimNodeUnreachable %q does not say how to mark the machine down", msg)
		}
		keptFor(ctx, t, c, js, &pod, before[0], 10*time.Second)
		if err := c.Get(ctx, client.ObjectKeyFromObject(second), second); err != nil || !second.DeletionTimestamp.IsZero() {
			t.Errorf("the second pod on the node was deleted (%v)", err)
		}
		return ctx
	})
	testenv.Test(t, f)
}

// TestNodeOutOfServiceRecreate: the machine behind the partition is down, and an operator says
// so with the node.kubernetes.io/out-of-service taint: whenNodeLost: Recreate gives the pod a
// new PVC on the other node at once, long before its grace (10m) for an unreachable node.
func TestNodeOutOfServiceRecreate(t *testing.T) {
	f := framework.NamespacedFeature("whenNodeLost and out-of-service", "the out-of-service taint: Recreate at once", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		c := framework.Client(t, cfg)
		ns := framework.NamespaceFrom(ctx)
		pool := newLocalPool(ctx, t, cfg, c, "nl-oos", 2)
		js := nodeLostJobSetWith(ns, "oos", pool, "whenNodeLost: Recreate, nodeLostGracePeriod: 10m")
		pod, before := startOnPool(ctx, t, c, js)
		cs := clientset(t, cfg)
		if err := framework.PartitionNode(ctx, cs, pod.Spec.NodeName, time.Now()); err != nil {
			t.Fatal(err)
		}
		if err := framework.TaintNode(ctx, cs, pod.Spec.NodeName, outOfService); err != nil {
			t.Fatal(err)
		}
		msg := recreatedOnOther(ctx, t, c, js, pod, before, 45*time.Second)
		if !strings.Contains(msg, "out-of-service") {
			t.Errorf("VolumeClaimNodeLost %q does not name the out-of-service taint", msg)
		}
		return ctx
	})
	testenv.Test(t, f)
}

var outOfService = corev1.Taint{Key: corev1.TaintNodeOutOfService, Value: "nodeshutdown", Effect: corev1.TaintEffectNoExecute}

// TestNodeUnreachableOptIn: with whenNodeUnreachable: Recreate, an unreachable node's data is
// given up once volumeclaims has itself seen the node unreachable for the grace: not at once,
// though the node's taint says it was added an hour ago.
func TestNodeUnreachableOptIn(t *testing.T) {
	f := framework.NamespacedFeature("whenNodeUnreachable: Recreate", "given up after the grace on the add-on's clock", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		c := framework.Client(t, cfg)
		ns := framework.NamespaceFrom(ctx)
		pool := newLocalPool(ctx, t, cfg, c, "nl-optin", 2)
		js := nodeLostJobSetWith(ns, "optin", pool, fmt.Sprintf("whenNodeLost: Recreate, whenNodeUnreachable: Recreate, nodeLostGracePeriod: %s", nodeLostGrace))
		pod, before := startOnPool(ctx, t, c, js)
		if err := framework.PartitionNode(ctx, clientset(t, cfg), pod.Spec.NodeName, time.Now().Add(-time.Hour)); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		keptFor(ctx, t, c, js, nil, before[0], nodeLostGrace-10*time.Second)
		recreatedOnOther(ctx, t, c, js, pod, before, nodeLostGrace+30*time.Second)
		t.Logf("given up %s after the partition", time.Since(start).Round(time.Second))
		return ctx
	})
	testenv.Test(t, f)
}

// TestNodeLostLimitAddonWrites: with the chart's admissionPolicies.limitAddonWrites policy
// applied, whenNodeUnreachable: Recreate cannot force-delete a pod still Running on an
// unreachable node: a VolumeClaimPodDeleteRefused Warning names the policy, and the PVC is
// kept. Once the operator taints the node out-of-service, Kubernetes evicts the pod and the
// PVC is given up: the JobSet goes on, on the other node.
func TestNodeLostLimitAddonWrites(t *testing.T) {
	f := framework.NamespacedFeature("whenNodeLost with limitAddonWrites", "refused deletes told; Recreate once Kubernetes evicts", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		c := framework.Client(t, cfg)
		ns := framework.NamespaceFrom(ctx)
		tb, err := framework.DefaultConfig()
		if err != nil {
			t.Fatal(err)
		}
		// The limitAddonWrites policies alone: the chart's default ones (reserved keys), which the
		// testbed applied when it started the add-on, are left as they are for the tests after.
		policies, err := tb.RenderChart(ctx, "volumeclaims", "admissionPolicies.limitAddonWrites.enabled=true",
			"admissionPolicies.reservedKeys.enabled=false", "admissionPolicies.sequencerDryRunsOnly.enabled=false")
		if err != nil {
			t.Fatal(err)
		}
		cs := clientset(t, cfg)
		if err := framework.ApplyPolicies(ctx, cs, policies); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = framework.DeletePolicies(context.Background(), cs, policies) })
		pool := newLocalPool(ctx, t, cfg, c, "nl-vap", 2)
		js := nodeLostJobSetWith(ns, "vap", pool, fmt.Sprintf("whenNodeLost: Recreate, whenNodeUnreachable: Recreate, nodeLostGracePeriod: %s", nodeLostGrace))
		pod, before := startOnPool(ctx, t, c, js)
		if err := framework.PartitionNode(ctx, cs, pod.Spec.NodeName, time.Now()); err != nil {
			t.Fatal(err)
		}
		msg := waitEvent(ctx, t, c, js, "VolumeClaimPodDeleteRefused", nodeLostGrace+30*time.Second)
		if !strings.Contains(msg, "jobset-addons-volumeclaims-pod-deletes") {
			t.Errorf("VolumeClaimPodDeleteRefused %q does not name the policy", msg)
		}
		keptFor(ctx, t, c, js, &pod, before[0], 5*time.Second)
		if err := framework.TaintNode(ctx, cs, pod.Spec.NodeName, outOfService); err != nil {
			t.Fatal(err)
		}
		recreatedOnOther(ctx, t, c, js, pod, before, time.Minute)
		return ctx
	})
	testenv.Test(t, f)
}
