package kind_test

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/e2e/framework"
	"github.com/jobset-addons/jobset-addons/e2e/kindbed"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// TestNodeLostOnRealNodes: two JobSets, each of one pod with a per-pod PVC on a local PV of the
// first worker (statically provisioned, pinned by kubernetes.io/hostname), one with whenNodeLost
// and whenNodeUnreachable: Recreate (the opt-in for a node only unreachable) and one with Keep.
// Once both run there, the second worker gets local PVs too and the first worker's container
// is stopped: its node goes NotReady and unreachable. With Recreate the JobSet completes on the
// second worker, on a new PVC, with a restart counted; with Keep the PVC stays, an Event says
// the node is unreachable and the data kept, and the JobSet does not complete. The worker is
// started again at the end.
func TestNodeLostOnRealNodes(t *testing.T) {
	f := framework.NamespacedFeature("whenNodeLost on real nodes", "a worker stopped: Recreate completes on the other, Keep waits", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		c := framework.Client(t, cfg)
		ns := framework.NamespaceFrom(ctx)
		ws := workers(ctx, t, c)
		if len(ws) < 2 {
			t.Fatalf("%d workers, want 2", len(ws))
		}
		lost, other := spareWorkers(ctx, t, c, ws)
		jss := map[string]*jobsetv1alpha2.JobSet{}
		for _, mode := range []string{"Recreate", "Keep"} {
			class := localClass(ctx, t, c, ns, mode)
			localPVOn(ctx, t, c, class, lost)
			js := kindbed.JobSet(ns, "lost-"+map[string]string{"Recreate": "recreate", "Keep": "keep"}[mode], map[string]string{contract.PoliciesAnnotationKey: fmt.Sprintf(`
- targetReplicatedJobs: [w]
  templates: [{metadata: {name: scratch}, spec: {accessModes: [ReadWriteOnce], storageClassName: %s, resources: {requests: {storage: 8Mi}}}}]
  retentionPolicy: {whenNodeLost: %[2]s, whenNodeUnreachable: %[2]s, nodeLostGracePeriod: 30s}`, class, mode)}, 1,
				kindbed.ReplicatedJob("w", 1, 1, `echo "$ME" >/scratch/who && sleep 40`, "scratch"))
			if err := c.Create(ctx, js); err != nil {
				t.Fatal(err)
			}
			jss[mode] = js
		}
		before := map[string]types.UID{}
		for mode, js := range jss {
			p := waitPods(ctx, t, c, js, 1, "running on "+lost, storyTimeout, running)[0]
			if p.Spec.NodeName != lost {
				t.Fatalf("%s: pod on %s, want %s (its only PV)", mode, p.Spec.NodeName, lost)
			}
			before[mode] = scratchClaim(ctx, t, c, js).UID
			localPVOn(ctx, t, c, localClassName(ns, mode), other)
		}
		stopNode(ctx, t, lost)

		rec := jss["Recreate"]
		framework.Eventually(ctx, t, 4*time.Minute, "JobSet lost-recreate Completed", func(ctx context.Context) (bool, string, error) {
			if err := c.Get(ctx, client.ObjectKeyFromObject(rec), rec); err != nil {
				return false, err.Error(), nil
			}
			return completed(rec), fmt.Sprintf("restarts %d, conditions %+v", rec.Status.Restarts, rec.Status.Conditions), nil
		})
		pvc := scratchClaim(ctx, t, c, rec)
		if pvc.UID == before["Recreate"] || pvc.Spec.VolumeName != localPVName(localClassName(ns, "Recreate"), other) {
			t.Errorf("Recreate: PVC %s (volume %s) is not a new one on %s", pvc.Name, pvc.Spec.VolumeName, other)
		}
		if rec.Status.Restarts < 1 {
			t.Errorf("Recreate: %d restarts, want one counted", rec.Status.Restarts)
		}
		keep := jss["Keep"]
		framework.Eventually(ctx, t, time.Minute, "VolumeClaimNodeUnreachable on lost-keep", func(ctx context.Context) (bool, string, error) {
			got, err := framework.EventReasons(ctx, c, keep)
			return err == nil && got["VolumeClaimNodeUnreachable"] > 0, fmt.Sprint(got, err), nil
		})
		if err := c.Get(ctx, client.ObjectKeyFromObject(keep), keep); err != nil {
			t.Fatal(err)
		}
		if completed(keep) || scratchClaim(ctx, t, c, keep).UID != before["Keep"] {
			t.Errorf("Keep: the JobSet completed or its PVC was replaced")
		}
		return ctx
	})
	testenv.Test(t, f)
}

func completed(js *jobsetv1alpha2.JobSet) bool {
	return apimeta.IsStatusConditionTrue(js.Status.Conditions, string(jobsetv1alpha2.JobSetCompleted))
}

func localClassName(ns, mode string) string { return "local-" + ns + "-" + strings.ToLower(mode) }

// spareWorkers picks the worker to stop and the other one, and moves the add-ons' and JobSet's
// pods off the one to stop (the case needs the volumeclaims and JobSet controllers running):
// it is cordoned, their pods there deleted (their Deployments make them again on the other),
// and, once all of them are Ready elsewhere, uncordoned.
func spareWorkers(ctx context.Context, t *testing.T, c client.Client, ws []string) (lost, other string) {
	t.Helper()
	lost, other = ws[0], ws[1]
	if _, err := kb.Kubectl(ctx, nil, "cordon", lost); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if _, err := kb.Kubectl(ctx, nil, "uncordon", lost); err != nil {
			t.Fatal(err)
		}
	}()
	namespaces := []string{framework.AddonNamespace, kindbed.JobSetNamespace}
	for _, ns := range namespaces {
		if _, err := kb.Kubectl(ctx, nil, "-n", ns, "delete", "pod", "--field-selector", "spec.nodeName="+lost, "--wait=false"); err != nil {
			t.Fatal(err)
		}
	}
	framework.Eventually(ctx, t, 3*time.Minute, "the controllers Ready off "+lost, func(ctx context.Context) (bool, string, error) {
		var bad []string
		for _, ns := range namespaces {
			var list corev1.PodList
			if err := c.List(ctx, &list, client.InNamespace(ns)); err != nil {
				return false, err.Error(), nil
			}
			for _, p := range list.Items {
				if p.Spec.NodeName == lost || !framework.PodReady(&p) || p.DeletionTimestamp != nil {
					bad = append(bad, p.Name+" on "+p.Spec.NodeName)
				}
			}
		}
		return len(bad) == 0, fmt.Sprint(bad), nil
	})
	return lost, other
}

func localPVName(class, node string) string { return class + "-" + node }

// localClass makes a StorageClass of statically provisioned local PVs, bound on first use.
func localClass(ctx context.Context, t *testing.T, c client.Client, ns, mode string) string {
	t.Helper()
	sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: localClassName(ns, mode)}, Provisioner: "kubernetes.io/no-provisioner",
		VolumeBindingMode: ptr.To(storagev1.VolumeBindingWaitForFirstConsumer)}
	if err := c.Create(ctx, sc); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Delete(context.Background(), sc) })
	return sc.Name
}

// localPVOn makes a local PV of class on node, its directory made in the node's container.
func localPVOn(ctx context.Context, t *testing.T, c client.Client, class, node string) {
	t.Helper()
	dir := "/tmp/" + localPVName(class, node)
	if _, err := kb.Exec(ctx, node, "mkdir", "-p", dir); err != nil {
		t.Fatal(err)
	}
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: localPVName(class, node)},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("8Mi")},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			StorageClassName:              class,
			PersistentVolumeSource:        corev1.PersistentVolumeSource{Local: &corev1.LocalVolumeSource{Path: dir}},
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: []string{node}}},
			}}}},
		},
	}
	if err := c.Create(ctx, pv); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Delete(context.Background(), pv) })
}

// scratchClaim is the JobSet's one per-pod PVC.
func scratchClaim(ctx context.Context, t *testing.T, c client.Client, js *jobsetv1alpha2.JobSet) corev1.PersistentVolumeClaim {
	t.Helper()
	var pvc corev1.PersistentVolumeClaim
	key := types.NamespacedName{Namespace: js.Namespace, Name: "scratch-" + js.Name + "-w-0-0"}
	if err := c.Get(ctx, key, &pvc); err != nil {
		t.Fatal(err)
	}
	return pvc
}

// stopNode stops the node's container (its kubelet and pods with it), and starts it again when
// the test ends, waiting until the node is Ready.
func stopNode(ctx context.Context, t *testing.T, node string) {
	t.Helper()
	if out, err := exec.CommandContext(ctx, "docker", "stop", node).CombinedOutput(); err != nil {
		t.Fatalf("docker stop %s: %v: %s", node, err, out)
	}
	logf("stopped %s", node)
	t.Cleanup(func() {
		ctx := context.Background()
		if out, err := exec.CommandContext(ctx, "docker", "start", node).CombinedOutput(); err != nil {
			t.Errorf("docker start %s: %v: %s", node, err, out)
			return
		}
		framework.Eventually(ctx, t, 3*time.Minute, node+" Ready again", func(ctx context.Context) (bool, string, error) {
			out, err := kb.Kubectl(ctx, nil, "get", "node", node, "-o", "jsonpath={.status.conditions[?(@.type=='Ready')].status}")
			return err == nil && string(out) == "True", string(out), nil
		})
	})
}
