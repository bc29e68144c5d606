package kind_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/e2e/framework"
	"github.com/jobset-addons/jobset-addons/e2e/kindbed"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

const storyTimeout = 4 * time.Minute

// TestCheckpointsSurviveRestart is KEP-572 story 1 with real data: each pod of attempt 0 writes
// its own index into its per-pod PVC; one pod then fails on purpose and failurePolicy restarts
// the JobSet; every pod of attempt 1 reads back, from the same PVC (same UID), the index it
// wrote.
func TestCheckpointsSurviveRestart(t *testing.T) {
	f := framework.NamespacedFeature("KEP-572 story 1", "checkpoints survive a JobSet restart", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		c := framework.Client(t, cfg)
		ns := framework.NamespaceFrom(ctx)
		script := `
if [ "$ATTEMPT" = 0 ]; then
  echo "$ME" >/ckpt/index && sync && echo "attempt 0: $ME wrote $ME"
  if [ "$ME" = worker-1-1 ]; then
    while [ ! -f /tmp/fail ]; do sleep 0.2; done
    echo "attempt 0: $ME fails on purpose"; exit 1
  fi
  exec sleep 3600
fi
got=$(cat /ckpt/index)
echo "attempt $ATTEMPT: $ME read $got"
[ "$got" = "$ME" ]`
		js := kindbed.JobSet(ns, "story1", map[string]string{contract.PoliciesAnnotationKey: `
- targetReplicatedJobs: [worker]
  templates:
  - metadata: {name: ckpt}
    spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 8Mi}}}`}, 1,
			kindbed.ReplicatedJob("worker", 2, 2, script, "ckpt"))
		if err := c.Create(ctx, js); err != nil {
			t.Fatal(err)
		}
		first := waitPods(ctx, t, c, js, 4, "running attempt 0 and written", storyTimeout, func(p *corev1.Pod) bool {
			return running(p) && p.Annotations[contract.RestartAttemptAnnotationKey] == "0" && strings.Contains(logs(ctx, t, p), " wrote ")
		})
		pvcs := pvcUIDs(ctx, t, c, js)
		if len(pvcs) != 4 {
			t.Fatalf("%d per-pod PVCs, want 4: %v", len(pvcs), pvcs)
		}
		var failing *corev1.Pod
		for i := range first {
			if strings.Contains(logs(ctx, t, &first[i]), "worker-1-1 wrote") {
				failing = &first[i]
			}
		}
		if failing == nil {
			t.Fatal("no pod of index worker-1-1")
		}
		if _, err := kb.Kubectl(ctx, nil, "-n", ns, "exec", failing.Name, "-c", "work", "--", "touch", "/tmp/fail"); err != nil {
			t.Fatal(err)
		}
		framework.WaitJobSet(ctx, t, c, js, jobsetv1alpha2.JobSetCompleted)
		if js.Status.Restarts != 1 {
			t.Errorf("JobSet restarts = %d, want 1", js.Status.Restarts)
		}
		second := pods(ctx, t, c, js)
		if len(second) != 4 {
			t.Fatalf("%d pods after the restart, want 4", len(second))
		}
		for i := range second {
			p := &second[i]
			l := logs(ctx, t, p)
			if p.Annotations[contract.RestartAttemptAnnotationKey] != "1" || p.Status.Phase != corev1.PodSucceeded {
				t.Errorf("pod %s: attempt %s, phase %s, log %q", p.Name, p.Annotations[contract.RestartAttemptAnnotationKey], p.Status.Phase, l)
				continue
			}
			me := strings.Fields(l)
			if len(me) < 5 || me[2] != me[4] {
				t.Errorf("pod %s did not read back its own index: %q", p.Name, l)
			}
			t.Logf("pod %s: %s", p.Name, l)
		}
		if after := pvcUIDs(ctx, t, c, js); fmt.Sprint(after) != fmt.Sprint(pvcs) {
			t.Errorf("PVCs changed over the restart: before %v, after %v", pvcs, after)
		}
		return ctx
	})
	testenv.Test(t, f)
}

// TestSharedModelInOrder is KEP-572 story 2 with the sequencer on real pods: the initializer
// writes the model into the shared PVC; the trainers, held behind the sequencer's gate until the
// initializer completed, read it.
func TestSharedModelInOrder(t *testing.T) {
	f := framework.NamespacedFeature("KEP-572 story 2", "initializer writes, trainers read after it", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		c := framework.Client(t, cfg)
		ns := framework.NamespaceFrom(ctx)
		js := kindbed.JobSet(ns, "story2", map[string]string{
			contract.PoliciesAnnotationKey: `
- templates:
  - metadata: {name: model}
    spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 8Mi}}}`,
			contract.ExecutionPolicyAnnotationKey: "InOrder",
		}, 0,
			kindbed.ReplicatedJob("initializer", 1, 1, `sleep 2; echo "weights written by $ME" >/model/weights && sync && cat /model/weights`, "model"),
			kindbed.ReplicatedJob("trainer", 1, 2, `echo "$ME read: $(cat /model/weights)"`, "model"))
		if err := c.Create(ctx, js); err != nil {
			t.Fatal(err)
		}
		framework.WaitJobSet(ctx, t, c, js, jobsetv1alpha2.JobSetCompleted)
		var initDone time.Time
		var trainers []corev1.Pod
		for _, p := range pods(ctx, t, c, js) {
			st := p.Status.ContainerStatuses[0].State.Terminated
			if st == nil {
				t.Fatalf("pod %s: container not terminated: %+v", p.Name, p.Status.ContainerStatuses[0].State)
			}
			if p.Labels[contract.ReplicatedJobNameLabelKey] == "initializer" {
				initDone = st.FinishedAt.Time
			} else {
				trainers = append(trainers, p)
			}
		}
		if len(trainers) != 2 {
			t.Fatalf("%d trainer pods, want 2", len(trainers))
		}
		for i := range trainers {
			p := &trainers[i]
			l := logs(ctx, t, p)
			if !strings.HasSuffix(l, "read: weights written by initializer-0-0") {
				t.Errorf("trainer %s did not read the initializer's model: %q", p.Name, l)
			}
			started := p.Status.ContainerStatuses[0].State.Terminated.StartedAt.Time
			// Container times are whole seconds.
			if started.Before(initDone.Truncate(time.Second)) {
				t.Errorf("trainer %s started at %s, before the initializer finished at %s", p.Name, started, initDone)
			}
			t.Logf("trainer %s started %s after the initializer finished: %s", p.Name, started.Sub(initDone), l)
		}
		reasons, err := framework.EventReasons(ctx, c, js)
		if err != nil {
			t.Fatal(err)
		}
		if reasons["StageReleased"] == 0 {
			t.Errorf("no StageReleased Event on the JobSet: %v", reasons)
		}
		return ctx
	})
	testenv.Test(t, f)
}

// TestClaimPerJobSeenByContainer: resourceclaims makes one ResourceClaim per Job; the
// scheduler allocates it from the DRA driver running in the cluster, the kubelet prepares it
// through that driver, and the container sees the device (CDI environment).
func TestClaimPerJobSeenByContainer(t *testing.T) {
	f := framework.NamespacedFeature("resourceclaims", "a claim per Job, allocated and seen in the container", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		c := framework.Client(t, cfg)
		ns := framework.NamespaceFrom(ctx)
		rj := kindbed.ReplicatedJob("gpu", 2, 1, `env | grep '^DRA_' | sort`)
		rj.Template.Annotations = map[string]string{contract.TemplatesAnnotationKey: fmt.Sprintf(`
- metadata: {name: dev}
  spec: {devices: {requests: [{name: dev, exactly: {deviceClassName: %s}}]}}`, kindbed.DeviceClass)}
		js := kindbed.JobSet(ns, "claims", nil, 0, rj)
		if err := c.Create(ctx, js); err != nil {
			t.Fatal(err)
		}
		framework.WaitJobSet(ctx, t, c, js, jobsetv1alpha2.JobSetCompleted)
		for _, p := range pods(ctx, t, c, js) {
			job := p.Labels["job-name"]
			claim, err := contract.ResourceClaimName(job, "dev", 0)
			if err != nil {
				t.Fatal(err)
			}
			l := logs(ctx, t, &p)
			if !strings.Contains(l, "DRA_CLAIM="+ns+"/"+claim) || !strings.Contains(l, "DRA_DEVICE_GPU_") {
				t.Errorf("pod %s (Job %s) does not see claim %s: %q", p.Name, job, claim, l)
				continue
			}
			t.Logf("pod %s sees %s", p.Name, strings.ReplaceAll(l, "\n", " "))
		}
		return ctx
	})
	testenv.Test(t, f)
}

// pvcUIDs maps each PVC volumeclaims made for js to its UID.
func pvcUIDs(ctx context.Context, t *testing.T, c client.Client, js *jobsetv1alpha2.JobSet) map[string]string {
	t.Helper()
	var l corev1.PersistentVolumeClaimList
	if err := c.List(ctx, &l, client.InNamespace(js.Namespace), client.MatchingLabels{contract.JobSetNameLabelKey: js.Name}); err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for _, p := range l.Items {
		m[p.Name] = string(p.UID)
	}
	return m
}
