package kueue_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/e2e/framework"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

const sequencerGate = contract.SequencerSchedulingGateValue

// TestTopologyAwareScheduling: Kueue's topology-aware scheduling (a Topology of the testbed's
// block, rack and host labels; train's pods required in one rack) on JobSets that use all four
// add-ons but podgroups (kube-scheduler binds). Kueue's gate kueue.x-k8s.io/topology and the
// sequencer's gate sit on the same pods, each lifted by its owner only, in either order, and a
// pod is bound only once both are gone.
//
//   - Kueue first: at admission train's pods carry both gates; Kueue lifts its own at once
//     (assigning each pod its place in the rack), the sequencer's stays until init completes.
//   - The sequencer first: with Kueue held still (SIGSTOP), a train pod replaced while train
//     runs comes with both gates; the sequencer lifts its own at once (train is released), the
//     pod stays unbound behind Kueue's until Kueue resumes and lifts it.
func TestTopologyAwareScheduling(t *testing.T) {
	testenv.Test(t, feature("tas", "Kueue's topology gate and the sequencer's gate are each lifted by their owner, in either order",
		func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			c := framework.Client(t, cfg)
			ns := framework.NamespaceFrom(ctx)
			q := makeQueues(ctx, t, c, ns, queueOptions{cpu: "8", tas: true})
			tasShape := func(name, initRun, trainRun string) shape {
				return shape{name: name, queue: q.localQueue, all: true, initRun: initRun, trainRun: trainRun, trainJobs: 2, trainPods: 2, cpu: "1", rack: true}
			}

			// Kueue first, the sequencer second.
			fwd := tasShape("forward", "6s", "2s").jobSet(ns)
			framework.CreateAll(ctx, t, c, fwd)
			waitWorkload(ctx, t, c, fwd, "Admitted", time.Minute)
			framework.Eventually(ctx, t, 30*time.Second, "train Jobs carry both gates", func(ctx context.Context) (bool, string, error) {
				js, err := jobs(ctx, c, fwd)
				if err != nil {
					return false, err.Error(), nil
				}
				n := 0
				for _, j := range js {
					g := &corev1.Pod{Spec: j.Spec.Template.Spec}
					if j.Labels[contract.ReplicatedJobNameLabelKey] == "train" && !ptr.Deref(j.Spec.Suspend, false) && hasGate(g, testbedTopologyGate) && hasGate(g, sequencerGate) {
						n++
					}
				}
				return n == 2, fmt.Sprintf("%d of 2 train Jobs resumed with both gates", n), nil
			})
			framework.Eventually(ctx, t, 30*time.Second, "Kueue lifted its gate from train's pods, the sequencer's holds them", func(ctx context.Context) (bool, string, error) {
				ps, err := pods(ctx, c, fwd)
				if err != nil {
					return false, err.Error(), nil
				}
				var initPod *corev1.Pod
				waiting := 0
				var seen []string
				for i := range ps {
					p := &ps[i]
					if p.Labels[contract.ReplicatedJobNameLabelKey] == "init" {
						initPod = p
						continue
					}
					if bound(p) && initPod != nil && initPod.Status.Phase != corev1.PodSucceeded {
						return false, "", fmt.Errorf("train pod %s bound while init runs", p.Name)
					}
					seen = append(seen, p.Name+"["+gateNames(p)+"]")
					if !hasGate(p, testbedTopologyGate) && hasGate(p, sequencerGate) && !bound(p) {
						waiting++
					}
				}
				if initPod == nil || initPod.Status.Phase == corev1.PodSucceeded {
					return false, "", fmt.Errorf("init finished before train's pods were seen waiting for the sequencer alone: %v", seen)
				}
				return waiting == 4, fmt.Sprint(seen), nil
			})
			jobSetDone(ctx, t, c, fwd, 2*time.Minute)
			checkTopology(ctx, t, c, fwd)

			// The sequencer first, Kueue second.
			rev := tasShape("reverse", "1s", "20s").jobSet(ns)
			framework.CreateAll(ctx, t, c, rev)
			var victim corev1.Pod
			framework.Eventually(ctx, t, time.Minute, "reverse's train pods running", func(ctx context.Context) (bool, string, error) {
				ps, err := pods(ctx, c, rev)
				if err != nil {
					return false, err.Error(), nil
				}
				running := 0
				for _, p := range ps {
					if p.Labels[contract.ReplicatedJobNameLabelKey] == "train" && p.Status.Phase == corev1.PodRunning {
						running++
						victim = p
					}
				}
				return running == 4, fmt.Sprintf("%d train pods running", running), nil
			})
			if err := framework.PauseProcess(tb, "kueue"); err != nil {
				t.Fatal(err)
			}
			paused := true
			defer func() {
				if paused {
					_ = framework.ResumeProcess(tb, "kueue")
				}
			}()
			if err := c.Delete(ctx, &victim); err != nil {
				t.Fatal(err)
			}
			replacement := func(ctx context.Context) (*corev1.Pod, error) {
				ps, err := pods(ctx, c, rev)
				if err != nil {
					return nil, err
				}
				for i, p := range ps {
					if p.UID != victim.UID && p.Labels[contract.JobIndexLabelKey] == victim.Labels[contract.JobIndexLabelKey] &&
						p.Labels[contract.ReplicatedJobNameLabelKey] == "train" &&
						p.Labels[contract.JobCompletionIndexLabelKey] == victim.Labels[contract.JobCompletionIndexLabelKey] && p.DeletionTimestamp == nil {
						return &ps[i], nil
					}
				}
				return nil, nil
			}
			var uid types.UID
			framework.Eventually(ctx, t, 30*time.Second, "the replacement pod released by the sequencer, held by Kueue's gate", func(ctx context.Context) (bool, string, error) {
				p, err := replacement(ctx)
				if err != nil || p == nil {
					return false, fmt.Sprintf("no replacement yet (%v)", err), nil
				}
				uid = p.UID
				if bound(p) {
					return false, "", fmt.Errorf("replacement %s bound while Kueue's gate should hold it (gates %s)", p.Name, gateNames(p))
				}
				return !hasGate(p, sequencerGate) && hasGate(p, testbedTopologyGate), p.Name + " gates " + gateNames(p), nil
			})
			time.Sleep(3 * time.Second)
			if p, err := replacement(ctx); err != nil || p == nil || p.UID != uid || bound(p) || !hasGate(p, testbedTopologyGate) {
				t.Fatalf("the replacement pod did not wait behind Kueue's gate: %+v (%v)", p, err)
			}
			if err := framework.ResumeProcess(tb, "kueue"); err != nil {
				t.Fatal(err)
			}
			paused = false
			framework.Eventually(ctx, t, time.Minute, "Kueue lifted its gate, the replacement runs", func(ctx context.Context) (bool, string, error) {
				p, err := replacement(ctx)
				if err != nil || p == nil {
					return false, fmt.Sprintf("no replacement (%v)", err), nil
				}
				return len(p.Spec.SchedulingGates) == 0 && bound(p), p.Name + " gates " + gateNames(p) + " node " + p.Spec.NodeName, nil
			})
			jobSetDone(ctx, t, c, rev, 2*time.Minute)
			checkTopology(ctx, t, c, rev)
			return ctx
		}))
}

// testbedTopologyGate is Kueue's topology gate.
const testbedTopologyGate = topologyGate

// checkTopology checks that every train pod of the finished JobSet that ran did so in one rack,
// as Kueue's topology assignment required, and started after init completed.
func checkTopology(ctx context.Context, t *testing.T, c client.Client, js *jobsetv1alpha2.JobSet) {
	t.Helper()
	ps, err := pods(ctx, c, js)
	if err != nil {
		t.Fatal(err)
	}
	var initDone time.Time
	for _, p := range ps {
		if p.Labels[contract.ReplicatedJobNameLabelKey] == "init" && p.Status.Phase == corev1.PodSucceeded {
			initDone = finishedAt(&p)
		}
	}
	racks := map[string]int{}
	for _, p := range ps {
		if p.Labels[contract.ReplicatedJobNameLabelKey] != "train" || p.Status.Phase != corev1.PodSucceeded {
			continue
		}
		var node corev1.Node
		if err := c.Get(ctx, client.ObjectKey{Name: p.Spec.NodeName}, &node); err != nil {
			t.Fatal(err)
		}
		racks[node.Labels[framework.TopologyRackLabel]]++
		if startedAt(&p).Before(initDone) {
			t.Errorf("train pod %s started at %s, before init completed at %s", p.Name, startedAt(&p), initDone)
		}
	}
	if len(racks) != 1 {
		t.Errorf("%s's train pods ran in racks %v, want one rack", js.Name, racks)
	}
}
