package volumeclaims_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/e2e/framework"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// nodeLostGrace is the nodeLostGracePeriod of the node-loss cases: the shortest admitted.
const nodeLostGrace = contract.MinVolumeNodeLostGracePeriod

// localPool is a pool of kwok nodes, each with one statically provisioned local PV pinned to
// it by kubernetes.io/hostname, in a StorageClass of no provisioner that binds on first use:
// the shape of node-local storage. The nodes are tainted so that only the case's pods land there.
type localPool struct {
	class string
	nodes []string
}

// newLocalPool makes the pool name of n nodes, and removes it when the test ends.
func newLocalPool(ctx context.Context, t *testing.T, cfg *envconf.Config, c client.Client, name string, n int) localPool {
	t.Helper()
	return newLocalPoolAs(ctx, t, cfg, c, name, n, "")
}

// newLocalPoolAs is newLocalPool whose nodes' kubernetes.io/hostname labels are their names
// followed by suffix (kubelet --hostname-override, several clouds), their PVs pinned to those.
func newLocalPoolAs(ctx context.Context, t *testing.T, cfg *envconf.Config, c client.Client, name string, n int, suffix string) localPool {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cfg.Client().RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	p := localPool{class: "local-" + name}
	sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: p.class}, Provisioner: "kubernetes.io/no-provisioner",
		VolumeBindingMode: ptr.To(storagev1.VolumeBindingWaitForFirstConsumer)}
	framework.CreateAll(ctx, t, c, sc)
	t.Cleanup(func() { _ = c.Delete(context.Background(), sc) })
	alloc := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8"), corev1.ResourceMemory: resource.MustParse("32Gi"), corev1.ResourcePods: resource.MustParse("10")}
	for i := range n {
		node := fmt.Sprintf("%s-%d", name, i)
		taint := corev1.Taint{Key: poolKey, Value: name, Effect: corev1.TaintEffectNoSchedule}
		if err := framework.AddNode(ctx, cs, node, map[string]string{poolKey: name, corev1.LabelHostname: node + suffix}, []corev1.Taint{taint}, alloc); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cs.CoreV1().Nodes().Delete(context.Background(), node, metav1.DeleteOptions{}) })
		pv := localPV(p.class, node, node+suffix)
		framework.CreateAll(ctx, t, c, pv)
		t.Cleanup(func() { _ = c.Delete(context.Background(), pv) })
		p.nodes = append(p.nodes, node)
	}
	return p
}

const poolKey = "volumeclaims-e2e/pool"

// localPV is a local PV of class on node, pinned to its hostname label.
func localPV(class, node, hostname string) *corev1.PersistentVolume {
	return &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: "pv-" + node},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			StorageClassName:              class,
			PersistentVolumeSource:        corev1.PersistentVolumeSource{Local: &corev1.LocalVolumeSource{Path: "/mnt/disks/" + node}},
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: []string{hostname}}},
			}}}},
		},
	}
}

// nodeLostJobSet is a JobSet of one long-running pod in pool, with a per-pod PVC on the pool's
// local storage (scratch) and one on the default class (notes: its PV has no node affinity),
// whenNodeLost as given. Its Job replaces a lost pod (backoffLimit 2).
func nodeLostJobSet(ns, name string, pool localPool, whenNodeLost string) *jobsetv1alpha2.JobSet {
	return nodeLostJobSetWith(ns, name, pool, fmt.Sprintf("whenNodeLost: %s, nodeLostGracePeriod: %s", whenNodeLost, nodeLostGrace))
}

// nodeLostJobSetWith is nodeLostJobSet with the retention policy's fields given (YAML, in a
// flow mapping).
func nodeLostJobSetWith(ns, name string, pool localPool, retention string) *jobsetv1alpha2.JobSet {
	policies := fmt.Sprintf(`
- targetReplicatedJobs: [w]
  templates:
  - {metadata: {name: scratch}, spec: {accessModes: [ReadWriteOnce], storageClassName: %s, resources: {requests: {storage: 1Gi}}}}
  - {metadata: {name: notes}, spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}}
  retentionPolicy: {%s}
`, pool.class, retention)
	rj := replicatedJob("w", 1, 1, "scratch", "notes").BackoffLimit(ptr.To[int32](2))
	spec := rj.PodSpec()
	poolName := pool.class[len("local-"):]
	spec.NodeSelector = map[string]string{poolKey: poolName}
	spec.Tolerations = []corev1.Toleration{{Key: poolKey, Operator: corev1.TolerationOpEqual, Value: poolName, Effect: corev1.TaintEffectNoSchedule}}
	js := newJobSet(ns, name, policies, rj)
	delay(js, "10m")
	return js
}

// runningPod waits for a pod of the JobSet, other than those of skip, bound to a node, and
// returns it.
func runningPod(ctx context.Context, t *testing.T, c client.Client, ns, jobSet string, within time.Duration, skip ...types.UID) corev1.Pod {
	t.Helper()
	var got corev1.Pod
	framework.Eventually(ctx, t, within, "a pod of "+jobSet+" on a node", func(ctx context.Context) (bool, string, error) {
		var list corev1.PodList
		if err := c.List(ctx, &list, client.InNamespace(ns), client.MatchingLabels{contract.JobSetNameLabelKey: jobSet}); err != nil {
			return false, err.Error(), nil
		}
		var seen []string
		for _, p := range list.Items {
			seen = append(seen, fmt.Sprintf("%s on %q %s", p.Name, p.Spec.NodeName, p.Status.Phase))
			if !slices.Contains(skip, p.UID) && p.Spec.NodeName != "" && p.DeletionTimestamp.IsZero() && p.Status.Phase == corev1.PodRunning {
				got = p
				return true, "", nil
			}
		}
		return false, fmt.Sprint(seen), nil
	})
	return got
}

// boundPVCs returns the UID and the PV of each PVC of names, once all are Bound.
func boundPVCs(ctx context.Context, t *testing.T, c client.Client, ns string, names ...string) map[string][2]string {
	t.Helper()
	out := map[string][2]string{}
	framework.Eventually(ctx, t, time.Minute, fmt.Sprintf("PVCs %v Bound", names), func(ctx context.Context) (bool, string, error) {
		for _, n := range names {
			var pvc corev1.PersistentVolumeClaim
			if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: n}, &pvc); err != nil {
				return false, err.Error(), nil
			}
			if pvc.Status.Phase != corev1.ClaimBound || !pvc.DeletionTimestamp.IsZero() {
				return false, n + " " + string(pvc.Status.Phase), nil
			}
			out[n] = [2]string{string(pvc.UID), pvc.Spec.VolumeName}
		}
		return true, "", nil
	})
	return out
}

// TestNodeLostRecreate: with whenNodeLost: Recreate, deleting the node that the pod's local PV
// is pinned to gives the Job's replacement pod a new PVC of the same name, bound on the other
// node, within the grace and 30 s; a bare pod labelled as the JobSet's on that node is left
// alone; the PVC whose PV has no node affinity is the same one; an Event on the JobSet says what
// was given up.
func TestNodeLostRecreate(t *testing.T) {
	f := framework.NamespacedFeature("whenNodeLost: Recreate", "a new PVC on another node after the node is deleted", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		c := framework.Client(t, cfg)
		ns := framework.NamespaceFrom(ctx)
		pool := newLocalPool(ctx, t, cfg, c, "nl-recreate", 2)
		js := nodeLostJobSet(ns, "lost", pool, "Recreate")
		framework.CreateAll(ctx, t, c, js)
		scratch, notes := "scratch-lost-w-0-0", "notes-lost-w-0-0"
		pod := runningPod(ctx, t, c, ns, js.Name, time.Minute)
		before := boundPVCs(ctx, t, c, ns, scratch, notes)
		if before[scratch][1] != "pv-"+pod.Spec.NodeName {
			t.Fatalf("PVC %s is bound to %s, want the PV of the pod's node %s", scratch, before[scratch][1], pod.Spec.NodeName)
		}
		forged := forgedPodOn(ctx, t, c, js, pod)
		if err := c.Delete(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: pod.Spec.NodeName}}); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		// The forged pod mounts the PVC too, so the PVC's deletion waits for it (the
		// kubernetes.io/pvc-protection finalizer): it is looked at 10 s on, when volumeclaims
		// has acted (a deleted node is lost at once), and then deleted here (the pod garbage
		// collector would, 40 s after the node's deletion).
		time.Sleep(time.Until(start.Add(10 * time.Second)))
		if err := c.Get(ctx, client.ObjectKeyFromObject(forged), forged); err != nil || !forged.DeletionTimestamp.IsZero() {
			t.Errorf("bare pod %s, labelled as the JobSet's on the lost node, was deleted (%v)", forged.Name, err)
		}
		if err := c.Delete(ctx, forged, client.GracePeriodSeconds(0)); client.IgnoreNotFound(err) != nil {
			t.Fatal(err)
		}
		again := runningPod(ctx, t, c, ns, js.Name, nodeLostGrace+30*time.Second, pod.UID, forged.UID)
		after := boundPVCs(ctx, t, c, ns, scratch, notes)
		t.Logf("the replacement pod runs on %s %s after the node was deleted", again.Spec.NodeName, time.Since(start).Round(time.Second))
		if again.Spec.NodeName == pod.Spec.NodeName || after[scratch][0] == before[scratch][0] || after[scratch][1] != "pv-"+again.Spec.NodeName {
			t.Errorf("want a new PVC on the other node: pod on %s, PVC %s before %v, after %v", again.Spec.NodeName, scratch, before[scratch], after[scratch])
		}
		if after[notes] != before[notes] {
			t.Errorf("PVC %s, whose PV has no node affinity, was replaced: before %v, after %v", notes, before[notes], after[notes])
		}
		expectEvents(ctx, t, c, js, "VolumeClaimNodeLost")
		framework.ExpectMetrics(ctx, t, "volumeclaims", `jobset_addons_volumeclaims_node_lost_total{action="recreated"}`)
		return ctx
	})
	testenv.Test(t, f)
}

// forgedPodOn makes a bare pod on pod's node, with its volumes, that carries, by labels, the
// JobSet's name and UID: whoever may create pods can write them, so it is not the JobSet's and
// volumeclaims must never delete it.
func forgedPodOn(ctx context.Context, t *testing.T, c client.Client, js *jobsetv1alpha2.JobSet, pod corev1.Pod) *corev1.Pod {
	t.Helper()
	forged := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: "forged-" + js.Name,
			Labels: map[string]string{contract.JobSetNameLabelKey: js.Name, contract.JobSetUIDLabelKey: string(js.UID)}},
		Spec: corev1.PodSpec{NodeName: pod.Spec.NodeName, Tolerations: pod.Spec.Tolerations, Volumes: pod.Spec.Volumes,
			Containers: []corev1.Container{{Name: "main", Image: "forged"}}},
	}
	if err := c.Create(ctx, forged); err != nil {
		t.Fatal(err)
	}
	return forged
}

// TestNodeLostKeep: with whenNodeLost: Keep, the same loss leaves the PVC as it is, and an Event
// says that the pod waits for the node.
func TestNodeLostKeep(t *testing.T) {
	f := framework.NamespacedFeature("whenNodeLost: Keep", "the PVC kept, an Event says it waits", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		c := framework.Client(t, cfg)
		ns := framework.NamespaceFrom(ctx)
		pool := newLocalPool(ctx, t, cfg, c, "nl-keep", 2)
		js := nodeLostJobSet(ns, "kept", pool, "Keep")
		framework.CreateAll(ctx, t, c, js)
		scratch := "scratch-kept-w-0-0"
		pod := runningPod(ctx, t, c, ns, js.Name, time.Minute)
		before := boundPVCs(ctx, t, c, ns, scratch)
		if err := c.Delete(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: pod.Spec.NodeName}}); err != nil {
			t.Fatal(err)
		}
		expectEvents(ctx, t, c, js, "VolumeClaimWaitsForNode")
		deadline := time.Now().Add(nodeLostGrace + 5*time.Second)
		for time.Now().Before(deadline) {
			var pvc corev1.PersistentVolumeClaim
			if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: scratch}, &pvc); err != nil || string(pvc.UID) != before[scratch][0] || !pvc.DeletionTimestamp.IsZero() {
				t.Fatalf("PVC %s was deleted or replaced with whenNodeLost: Keep (%v)", scratch, err)
			}
			time.Sleep(500 * time.Millisecond)
		}
		msgs, err := framework.EventMessages(ctx, c, js, "VolumeClaimWaitsForNode")
		if err != nil || len(msgs) == 0 {
			t.Fatalf("no VolumeClaimWaitsForNode message: %v", err)
		}
		t.Logf("VolumeClaimWaitsForNode: %s", msgs[0])
		return ctx
	})
	testenv.Test(t, f)
}
