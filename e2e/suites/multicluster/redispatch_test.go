package multicluster_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/e2e/framework"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// The second worker's MultiKueue set-up: its MultiKueueCluster, and the manager's AdmissionCheck
// and ClusterQueue that dispatch to both workers (LocalQueue twoQueue in both workers too).
const (
	worker2Name = "worker2"
	twoWorkers  = "two-workers"
	twoQueue    = "lq-two"
)

// TestRedispatch: eviction in the manager, and what becomes of a retained per-pod PVC (a
// checkpoint) when MultiKueue sends the JobSet to another worker. A third testbed, worker2, joins
// (ports from the manager's base plus 400, or TESTBED_WORKER2_PORT_BASE). The all-add-ons JobSet,
// its ckpt PVCs retained when it is deleted (whenDeleted: Retain), is queued to both workers with
// worker2's ClusterQueue held, so it runs in worker1; while its node stage runs, worker1's
// ClusterQueue is held and worker2's released, and the manager's Workload is deactivated: the
// worker1 JobSet goes. Reactivated, it runs and completes in worker2. Measured and asserted:
// worker1 keeps the checkpoint PVC, worker2 makes a new, empty one; the manager holds none.
func TestRedispatch(t *testing.T) {
	ctx := context.Background()
	base := manager.PortBase + 400
	if v := os.Getenv("TESTBED_WORKER2_PORT_BASE"); v != "" {
		var err error
		if base, err = strconv.Atoi(v); err != nil {
			t.Fatalf("TESTBED_WORKER2_PORT_BASE=%q: %v", v, err)
		}
	}
	worker2 := defaults.Beside(worker2Name, base)
	began := time.Now()
	t.Cleanup(func() {
		if os.Getenv("TESTBED_KEEP") == "" {
			if err := again("stopping "+worker2.Name, func() error { return framework.Down(context.Background(), worker2, logf) }); err != nil {
				t.Errorf("stopping %s: %v", worker2.Name, err)
			}
		}
	})
	if err := startWorker(ctx, worker2); err != nil {
		t.Fatal(err)
	}
	mc, err := clientOf(manager)
	if err != nil {
		t.Fatal(err)
	}
	w1, err := clientOf(worker)
	if err != nil {
		t.Fatal(err)
	}
	w2, err := clientOf(worker2)
	if err != nil {
		t.Fatal(err)
	}
	if err := connect(ctx, mc, worker2, worker2Name); err != nil {
		t.Fatal(err)
	}
	if err := multiKueueQueue(ctx, mc, twoWorkers, twoWorkers, workerName, worker2Name); err != nil {
		t.Fatal(err)
	}
	t.Logf("worker2 started and connected in %s", time.Since(began).Round(time.Second))
	ns := "mk-" + rand.String(6)
	for _, c := range []client.Client{mc, w1, w2} {
		cq := clusterQueue
		if c == mc {
			cq = twoWorkers
		}
		if err := create(ctx, c, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
			framework.KueueObject("LocalQueue", ns, twoQueue, map[string]any{"clusterQueue": cq})); err != nil {
			t.Fatal(err)
		}
	}
	hold(ctx, t, w2, "Hold")

	start := time.Now()
	inManager := record(ctx, t, manager, "manager", ns, start)
	in1 := record(ctx, t, worker, "worker1", ns, start)
	in2 := record(ctx, t, worker2, "worker2", ns, start)
	defer func() {
		for _, r := range []*recorder{inManager, in1, in2} {
			r.stop()
			r.report(t, "ckpt")
		}
	}()

	js := queued(framework.AllAddonsJobSet(ns, "ckpt"))
	js.Labels[queueNameLabel] = twoQueue
	pvc := func(name string) string {
		return `{metadata: {name: ` + name + `}, spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}}`
	}
	js.Annotations[contract.PoliciesAnnotationKey] = `[{templates: [` + pvc("data") + `]}, {targetReplicatedJobs: [node], templates: [` + pvc("ckpt") + `], retentionPolicy: {whenDeleted: Retain}}]`
	js.Spec.ReplicatedJobs[1].Template.Spec.Template.Annotations[framework.DelayAnnotationKey] = "15s"
	if err := mc.Create(ctx, js); err != nil {
		t.Fatal(err)
	}
	// Its node stage running in worker1, with its checkpoint PVC.
	var ckpt1 corev1.PersistentVolumeClaim
	framework.Eventually(ctx, t, 2*time.Minute, "the node stage running in worker1", func(ctx context.Context) (bool, string, error) {
		_, _, bound := in1.podMoments("ckpt-node-")
		var list corev1.PersistentVolumeClaimList
		if err := w1.List(ctx, &list, client.InNamespace(ns), client.MatchingLabels{contract.VolumeClaimTemplateLabelKey: "ckpt"}); err != nil {
			return false, err.Error(), nil
		}
		if len(list.Items) == 1 {
			ckpt1 = list.Items[0]
		}
		return bound && len(list.Items) == 1, fmt.Sprintf("node pod bound %v, ckpt PVCs %d", bound, len(list.Items)), nil
	})
	evicted := time.Since(start)
	hold(ctx, t, w1, "Hold")
	hold(ctx, t, w2, "None")
	wl := managerWorkload(ctx, t, mc, js)
	setActive(ctx, t, mc, wl, false)
	framework.Eventually(ctx, t, 2*time.Minute, "worker1's JobSet gone after the eviction", func(ctx context.Context) (bool, string, error) {
		err := w1.Get(ctx, client.ObjectKeyFromObject(js), &jobsetv1alpha2.JobSet{})
		return client.IgnoreNotFound(err) == nil && err != nil, fmt.Sprint(err), nil
	})
	t.Logf("evicted at %.1fs (Workload deactivated in the manager); worker1's JobSet gone at %.1fs", evicted.Seconds(), time.Since(start).Seconds())
	setActive(ctx, t, mc, wl, true)
	framework.Eventually(ctx, t, 3*time.Minute, "the manager's copy Completed, from worker2", func(ctx context.Context) (bool, string, error) {
		var got jobsetv1alpha2.JobSet
		if err := mc.Get(ctx, client.ObjectKeyFromObject(js), &got); err != nil {
			return false, err.Error(), nil
		}
		done := false
		for _, c := range got.Status.Conditions {
			done = done || (c.Type == string(jobsetv1alpha2.JobSetCompleted) && c.Status == metav1.ConditionTrue)
		}
		return done, fmt.Sprint(got.Status.Conditions), nil
	})
	t.Logf("Completed in the manager, run by worker2, at %.1fs", time.Since(start).Seconds())
	// MultiKueue may create worker2's copy more than once while it settles the re-dispatch (seen:
	// created, deleted a second later, created again); its pods ran once.
	if in2.appearedOf("ckpt", "jobsets") < 1 || in2.appearedOf("ckpt", "pods") != 2 {
		t.Errorf("worker2 did not run the JobSet once: jobsets %d, pods %d", in2.appearedOf("ckpt", "jobsets"), in2.appearedOf("ckpt", "pods"))
	}
	t.Logf("worker2's copies of the JobSet: %d", in2.appearedOf("ckpt", "jobsets"))
	// The checkpoint: worker1 keeps it; worker2 made a new one.
	var still corev1.PersistentVolumeClaim
	if err := w1.Get(ctx, client.ObjectKeyFromObject(&ckpt1), &still); err != nil || still.UID != ckpt1.UID {
		t.Errorf("worker1's checkpoint PVC %s after the re-dispatch: %v (uid %s, was %s)", ckpt1.Name, err, still.UID, ckpt1.UID)
	} else {
		t.Logf("worker1 keeps the checkpoint PVC %s (%s, created %s), its JobSet gone", still.Name, still.Status.Phase, still.CreationTimestamp.Format(time.TimeOnly))
	}
	var ckpt2 corev1.PersistentVolumeClaim
	if err := w2.Get(ctx, client.ObjectKeyFromObject(&ckpt1), &ckpt2); err != nil {
		t.Errorf("worker2's checkpoint PVC %s: %v", ckpt1.Name, err)
	} else {
		t.Logf("worker2 made its own checkpoint PVC %s (created %s): empty, not worker1's", ckpt2.Name, ckpt2.CreationTimestamp.Format(time.TimeOnly))
	}
	if seen := inManager.kindsSeen("ckpt", addonKinds); len(seen) > 0 {
		t.Errorf("manager: objects appeared for the JobSet: %v", seen)
	}
}

// hold sets the stopPolicy of the worker's ClusterQueue: Hold admits nothing new, None admits.
func hold(ctx context.Context, t *testing.T, c client.Client, policy string) {
	t.Helper()
	cq := framework.KueueObject("ClusterQueue", "", clusterQueue, nil)
	patch := fmt.Sprintf(`{"spec":{"stopPolicy":%q}}`, policy)
	if err := c.Patch(ctx, cq, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		t.Fatalf("ClusterQueue %s stopPolicy %s: %v", clusterQueue, policy, err)
	}
}

// managerWorkload is the Kueue Workload of js in the manager.
func managerWorkload(ctx context.Context, t *testing.T, c client.Client, js *jobsetv1alpha2.JobSet) client.ObjectKey {
	t.Helper()
	var name string
	framework.Eventually(ctx, t, time.Minute, "the manager's Workload of "+js.Name, func(ctx context.Context) (bool, string, error) {
		list := &unstructured.UnstructuredList{}
		list.SetAPIVersion("kueue.x-k8s.io/v1beta2")
		list.SetKind("WorkloadList")
		if err := c.List(ctx, list, client.InNamespace(js.Namespace)); err != nil {
			return false, err.Error(), nil
		}
		for _, wl := range list.Items {
			for _, r := range wl.GetOwnerReferences() {
				if r.UID == js.UID {
					name = wl.GetName()
				}
			}
		}
		return name != "", fmt.Sprintf("%d Workloads", len(list.Items)), nil
	})
	return client.ObjectKey{Namespace: js.Namespace, Name: name}
}

// setActive sets spec.active of the manager's Workload wl: false evicts it (Kueue deactivates
// it), true queues it again.
func setActive(ctx context.Context, t *testing.T, c client.Client, wl client.ObjectKey, active bool) {
	t.Helper()
	u := framework.KueueObject("Workload", wl.Namespace, wl.Name, nil)
	patch := fmt.Sprintf(`{"spec":{"active":%t}}`, active)
	if err := c.Patch(ctx, u, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		t.Fatalf("Workload %s active %t: %v", wl, active, err)
	}
}
