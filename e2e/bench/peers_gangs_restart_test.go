package bench

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/jobset-addons/jobset-addons/e2e/framework"
	"github.com/jobset-addons/jobset-addons/e2e/testbed"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// podGroupsRestartPeers: the cold start of podgroups (Volcano backend) with n JobSets whose
// PodGroups are gone, against Kueue's with n JobSets whose Workloads are gone and Volcano's job
// controller's with n Volcano Jobs whose PodGroups are gone: from the process start until all n
// exist again.
func podGroupsRestartPeers(ctx context.Context, b *testing.B, tb testbed.Config, c client.Client, smoke bool) []peerPair {
	if smoke {
		return nil
	}
	n := gangPeerJobSets(false)
	prepareGangPeers(ctx, b, tb, c)
	vcBin := vcControllerManager(b)
	var prepared *testbed.PreparedAddon
	ours := restartSpec{
		name: "podgroups (volcano), cold start", procs: []string{"podgroups"}, gvr: volcanoPodGroup, match: podGroupsOurs, n: n,
		up: func(ctx context.Context) error { return testbed.StartAddon(ctx, tb, "podgroups", nil, addonArgs()...) },
		source: func(ctx context.Context, ns string, i int) error {
			return c.Create(ctx, gangJobSetOf(contract.SchedulerVolcano, ns, fmt.Sprintf("pg-%d", i), 2))
		},
		settle: func(ctx context.Context, b *testing.B, ns string) { quietJobSets(ctx, b, c, ns, n) },
		down: func(ctx context.Context) (err error) {
			if err := testbed.StopAddon(ctx, tb, "podgroups"); err != nil {
				return err
			}
			// The harness's own preparation (certificate, chart render, token) before the clock.
			prepared, err = testbed.PrepareAddon(ctx, tb, "podgroups", addonArgs()...)
			return err
		},
		clear: func(ctx context.Context, ns string) error {
			return deleteAllIn(ctx, c, volcanoPodGroupList, ns, podGroupsOurs)
		},
		start: func(ctx context.Context) error { return prepared.Start(ctx, nil) },
		after: func(ctx context.Context, b *testing.B, _ string) {
			stopped(b, "podgroups", testbed.StopAddon(ctx, tb, "podgroups"))
		},
	}
	kueue := restartSpec{
		name: "Kueue " + tb.KueueVersion() + ", restart", procs: []string{"kueue"}, gvr: kueueWorkloads, n: n,
		up: func(ctx context.Context) error { return startKueueHeld(ctx, b, tb, c) },
		prepare: func(ctx context.Context, ns string) error {
			return c.Create(ctx, framework.KueueObject("LocalQueue", ns, peersKueueQueue, map[string]any{"clusterQueue": peersKueueQueue}))
		},
		source: func(ctx context.Context, ns string, i int) error {
			return c.Create(ctx, kueueJobSet(ns, fmt.Sprintf("kq-%d", i)))
		},
		settle: func(ctx context.Context, b *testing.B, ns string) { quietJobSets(ctx, b, c, ns, n) },
		down:   func(ctx context.Context) error { return testbed.StopKueue(ctx, tb) },
		clear: func(ctx context.Context, ns string) error {
			list := kueueWorkloads.GroupVersion().WithKind("WorkloadList")
			if err := deleteAllIn(ctx, c, list, ns, nil); err != nil {
				return err
			}
			return stripFinalizers(ctx, c, list, ns) // Kueue's, which it is not there to remove
		},
		start: func(ctx context.Context) error { return testbed.StartKueueAgain(ctx, tb, testbed.KueueOptions{}) },
		after: func(ctx context.Context, b *testing.B, ns string) { stopKueueAfter(ctx, b, tb, c, ns) },
	}
	volcano := restartSpec{
		name: "Volcano job controller, restart", procs: []string{testbed.VolcanoControllersComm}, gvr: volcanoPodGroup, n: n,
		up: func(ctx context.Context) error { return testbed.StartVolcanoControllers(ctx, tb, vcBin) },
		source: func(ctx context.Context, ns string, i int) error {
			return c.Create(ctx, volcanoJob(ns, fmt.Sprintf("vj-%d", i)))
		},
		settle: func(context.Context, *testing.B, string) { time.Sleep(2 * time.Second) },
		down:   func(context.Context) error { return testbed.StopVolcanoControllers(tb) },
		clear:  func(ctx context.Context, ns string) error { return deleteAllIn(ctx, c, volcanoPodGroupList, ns, nil) },
		start:  func(ctx context.Context) error { return testbed.StartVolcanoControllers(ctx, tb, vcBin) },
		after: func(_ context.Context, b *testing.B, _ string) {
			stopped(b, "Volcano's controller-manager", testbed.StopVolcanoControllers(tb))
		},
	}
	return []peerPair{{
		name: fmt.Sprintf("podgroups restart, %d JobSets (Volcano Jobs): from the process start", n),
		ours: ours.side(tb, c), peers: []peerSide{kueue.side(tb, c), volcano.side(tb, c)},
	}}
}

// restartSpec is a side of a cold start. Its setup makes, in a namespace of its own, n sources
// with its controller up, waits for their n objects (gvr, matching match) and for the cluster
// to settle, takes the controller down, and deletes the objects (clear); its window starts the
// controller (start) and lasts until the n objects exist again. after runs at teardown, before
// the namespace goes.
type restartSpec struct {
	name  string
	procs []string
	gvr   schema.GroupVersionResource
	match map[string]string
	n     int

	up, down, start func(ctx context.Context) error
	prepare, clear  func(ctx context.Context, ns string) error
	source          func(ctx context.Context, ns string, i int) error
	settle          func(ctx context.Context, b *testing.B, ns string)
	after           func(ctx context.Context, b *testing.B, ns string)
}

func (r restartSpec) side(tb testbed.Config, c client.Client) peerSide {
	var clock *objectClock
	return peerSide{
		name: r.name, procs: r.procs,
		setup: func(ctx context.Context, b *testing.B) (func(), error) {
			ns := namespace(ctx, b, c, "peers-restart")
			var err error
			if clock, err = r.fill(ctx, b, tb, ns); err != nil {
				return nil, err
			}
			return func() {
				clock.Stop()
				r.after(ctx, b, ns)
				clearNamespace(ctx, b, c, ns)
				deleteAndWait(ctx, b, c, ns)
			}, nil
		},
		run: func(ctx context.Context, _ *testing.B, _ client.Client, _ string) (peerResult, error) {
			start := time.Now()
			if err := r.start(ctx); err != nil {
				return peerResult{}, err
			}
			at, err := clock.until(r.n, 5*time.Minute)
			if err != nil {
				return peerResult{}, fmt.Errorf("%s after the restart: %w", r.gvr.Resource, err)
			}
			return peerResult{objects: r.n, lastObject: at.Sub(start)}, nil
		},
	}
}

// fill brings ns to the state before the restart: n sources, their objects made and deleted
// again, the controller down. The returned clock counts the objects in ns, from none.
func (r restartSpec) fill(ctx context.Context, b *testing.B, tb testbed.Config, ns string) (*objectClock, error) {
	if err := r.up(ctx); err != nil {
		return nil, err
	}
	if r.prepare != nil {
		if err := r.prepare(ctx, ns); err != nil {
			return nil, err
		}
	}
	clock, err := nsClock(ctx, tb, r.gvr, ns, r.match)
	if err != nil {
		return nil, err
	}
	if err := createParallel(r.n, 8, func(i int) error { return r.source(ctx, ns, i) }); err != nil {
		return nil, err
	}
	if _, err := clock.until(r.n, 5*time.Minute); err != nil {
		return nil, err
	}
	r.settle(ctx, b, ns)
	if err := r.down(ctx); err != nil {
		return nil, err
	}
	if err := r.clear(ctx, ns); err != nil {
		return nil, err
	}
	if err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 2*time.Minute, true, func(context.Context) (bool, error) {
		return clock.count() == 0, nil
	}); err != nil {
		return nil, fmt.Errorf("%d %s left in %s", clock.count(), r.gvr.Resource, ns)
	}
	return clock, nil
}

// deleteAllIn deletes the objects of a list kind in ns that match.
func deleteAllIn(ctx context.Context, c client.Client, list schema.GroupVersionKind, ns string, match map[string]string) error {
	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(list.GroupVersion().WithKind(strings.TrimSuffix(list.Kind, "List")))
	return c.DeleteAllOf(ctx, obj, client.InNamespace(ns), client.MatchingLabels(match), client.PropagationPolicy(metav1.DeletePropagationBackground))
}
