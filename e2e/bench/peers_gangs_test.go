package bench

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/e2e/framework"
	"github.com/jobset-addons/jobset-addons/e2e/testbed"
	"github.com/jobset-addons/jobset-addons/pkg/addon/addontest"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// The podgroups scenarios of BenchmarkPeers: JobSets of one gang each (2 Jobs of 2 pods,
// suspended: no scheduler runs) against Kueue making a Workload per JobSet for the same JobSets,
// and against Volcano's job controller making a PodGroup per Volcano Job of the same 4 pods.
// Each side runs its controller alone in its windows (started in its setup, stopped after), so
// that no idle controller's watches load another's window.
func init() {
	peerScenarios = append(peerScenarios,
		peerScenario{"podgroups", "podgroups", podGroupsPeers},
		peerScenario{"podgroups-restart", "podgroups", podGroupsRestartPeers})
}

// peersKueueQueue is the LocalQueue, and the ClusterQueue, of the Kueue side's JobSets; the
// ClusterQueue holds (stopPolicy Hold), so its Workloads wait, as the suspended JobSets of ours.
const peersKueueQueue = "peers"

// kueueJobSetWorkers is what Kueue logs as its JobSet controller's workers start.
var kueueJobSetWorkers = regexp.MustCompile(`"logger":"jobset",[^\n]*"msg":"Starting workers"`)

// vcControllerManagerEnv names Volcano's controller-manager binary (make bench ADDON=peers
// builds it and sets it).
const vcControllerManagerEnv = "VOLCANO_CONTROLLER_MANAGER"

var (
	kueueWorkloads  = testbed.KueueGVR("workloads")
	volcanoJobs     = schema.GroupVersionResource{Group: "batch.volcano.sh", Version: "v1alpha1", Resource: "jobs"}
	volcanoPodGroup = volcanoPodGroupList.GroupVersion().WithResource("podgroups")
)

// gangPeerJobSets is how many JobSets (Volcano Jobs) a side makes: $BENCH_PEERS_JOBSETS, 500
// by default; 30 in bench-smoke (a window's setup and cleanup, not its JobSets, are most of its
// time there).
func gangPeerJobSets(smoke bool) int {
	if smoke {
		return 30
	}
	return envIntOr("BENCH_PEERS_JOBSETS", 500)
}

// podGroupsPeers: for each backend, podgroups against Kueue and Volcano's job controller;
// reduced (bench-smoke), the Volcano backend against Kueue only.
func podGroupsPeers(ctx context.Context, b *testing.B, tb testbed.Config, c client.Client, smoke bool) []peerPair {
	n := gangPeerJobSets(smoke)
	prepareGangPeers(ctx, b, tb, c)
	kueue := kueuePeer(tb, c, n)
	if smoke {
		return []peerPair{{name: fmt.Sprintf("podgroups (volcano), %d JobSets", n), ours: podGroupsSide(tb, c, contract.SchedulerVolcano, n), peers: []peerSide{kueue}}}
	}
	volcano := volcanoJobsPeer(b, tb, c, n)
	var pairs []peerPair
	for _, s := range gangPeerBackends() {
		pairs = append(pairs, peerPair{
			name: fmt.Sprintf("podgroups (%s), %d JobSets, a gang object each", s, n),
			ours: podGroupsSide(tb, c, s, n), peers: []peerSide{kueue, volcano},
		})
	}
	return pairs
}

// gangPeerBackends are the backends of podgroups' pairs: $BENCH_PEERS_BACKENDS (a comma-separated
// list), all three by default.
func gangPeerBackends() []contract.Scheduler {
	all := []contract.Scheduler{contract.SchedulerVolcano, contract.SchedulerCoscheduling, contract.SchedulerKubernetes}
	only := os.Getenv("BENCH_PEERS_BACKENDS")
	if only == "" {
		return all
	}
	var picked []contract.Scheduler
	for _, s := range all {
		if slices.Contains(strings.Split(only, ","), string(s)) {
			picked = append(picked, s)
		}
	}
	return picked
}

// prepareGangPeers installs Volcano's and scheduler-plugins' CRDs and Volcano's default Queue
// (Volcano's scheduler makes it, and does not run here).
func prepareGangPeers(ctx context.Context, b *testing.B, tb testbed.Config, c client.Client) {
	if err := testbed.InstallGangCRDs(ctx, tb); err != nil {
		b.Fatal(err)
	}
	q := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"weight": int64(1), "reclaimable": true}}}
	q.SetGroupVersionKind(schema.GroupVersionKind{Group: "scheduling.volcano.sh", Version: "v1beta1", Kind: "Queue"})
	q.SetName("default")
	if err := c.Create(ctx, q); err != nil && !apierrors.IsAlreadyExists(err) {
		b.Fatal(err)
	}
}

// gangObjects is the gang object of backend s that podgroups makes.
func gangObjects(s contract.Scheduler) schema.GroupVersionResource {
	switch s {
	case contract.SchedulerCoscheduling:
		return coschedPodGroupList.GroupVersion().WithResource("podgroups")
	case contract.SchedulerKubernetes:
		return nativePodGroupList.GroupVersion().WithResource("podgroups") // each after its Workload
	}
	return volcanoPodGroup
}

var podGroupsOurs = map[string]string{contract.ManagedByLabelKey: contract.PodGroupsManagedByValue}

// podGroupsSide: n JobSets of backend s, until podgroups made their n gang objects.
func podGroupsSide(tb testbed.Config, c client.Client, s contract.Scheduler, n int) peerSide {
	var last string // the namespace of the last window, emptied at teardown
	return peerSide{
		name: fmt.Sprintf("podgroups (%s)", s), procs: []string{"podgroups"},
		setup: func(ctx context.Context, b *testing.B) (func(), error) {
			if err := testbed.StartAddon(ctx, tb, "podgroups", nil, addonArgs()...); err != nil {
				return nil, err
			}
			return func() {
				clearNamespace(ctx, b, c, last)
				stopped(b, "podgroups", testbed.StopAddon(ctx, tb, "podgroups"))
			}, nil
		},
		run: func(ctx context.Context, b *testing.B, c client.Client, ns string) (peerResult, error) {
			last = ns
			return createUntil(ctx, tb, gangObjects(s), ns, podGroupsOurs, n, func(i int) error {
				return c.Create(ctx, gangJobSetOf(s, ns, fmt.Sprintf("pg-%d", i), 2))
			})
		},
	}
}

// createUntil creates n objects (create(i), 8 at once) and returns once n objects of gvr that
// match exist in ns: lastObject from the first create.
func createUntil(ctx context.Context, tb testbed.Config, gvr schema.GroupVersionResource, ns string, match map[string]string, n int, create func(i int) error) (peerResult, error) {
	clock, err := nsClock(ctx, tb, gvr, ns, match)
	if err != nil {
		return peerResult{}, err
	}
	defer clock.Stop()
	start := time.Now()
	if err := createParallel(n, 8, create); err != nil {
		return peerResult{}, err
	}
	at, err := clock.until(n, 5*time.Minute)
	if err != nil {
		return peerResult{}, fmt.Errorf("%s in %s: %w", gvr.Resource, ns, err)
	}
	return peerResult{objects: n, lastObject: at.Sub(start)}, nil
}

func nsClock(ctx context.Context, tb testbed.Config, gvr schema.GroupVersionResource, ns string, match map[string]string) (*objectClock, error) {
	rc, err := tb.RESTConfig()
	if err != nil {
		return nil, err
	}
	return watchCount(ctx, rc, gvr, ns, match, "")
}

func stopped(b *testing.B, what string, err error) {
	if err != nil {
		b.Errorf("stopping %s: %v", what, err)
	}
}

// kueueJobSet is a JobSet of gangJobSet's shape, without a gang scheduler, queued in Kueue's
// LocalQueue peersKueueQueue.
func kueueJobSet(ns, name string) *jobsetv1alpha2.JobSet {
	return addontest.JobSet(ns, name).Label("kueue.x-k8s.io/queue-name", peersKueueQueue).Suspend(true).ReplicatedJobs(
		addontest.ReplicatedJob("w").Replicas(2).Pods(2).BackoffLimit(nil).Requests("1", ""),
	).Obj()
}

// kueuePeer: Kueue (its JobSet integration) making a Workload for each of n JobSets.
func kueuePeer(tb testbed.Config, c client.Client, n int) peerSide {
	var last string // the namespace of the last window, emptied before Kueue stops
	return peerSide{
		name: "Kueue " + tb.KueueVersion(), procs: []string{"kueue"},
		setup: func(ctx context.Context, b *testing.B) (func(), error) {
			if err := startKueueHeld(ctx, b, tb, c); err != nil {
				return nil, err
			}
			return func() {
				stopKueueAfter(ctx, b, tb, c, last)
				clearNamespace(ctx, b, c, last)
			}, nil
		},
		run: func(ctx context.Context, b *testing.B, c client.Client, ns string) (peerResult, error) {
			last = ns
			if err := c.Create(ctx, framework.KueueObject("LocalQueue", ns, peersKueueQueue, map[string]any{"clusterQueue": peersKueueQueue})); err != nil {
				return peerResult{}, err
			}
			return createUntil(ctx, tb, kueueWorkloads, ns, nil, n, func(i int) error {
				return c.Create(ctx, kueueJobSet(ns, fmt.Sprintf("kq-%d", i)))
			})
		},
	}
}

// startKueueHeld starts Kueue, with a ResourceFlavor and the held ClusterQueue peersKueueQueue,
// and returns once its JobSet controller's workers run (its readyz answers before).
func startKueueHeld(ctx context.Context, b *testing.B, tb testbed.Config, c client.Client) error {
	logged := testbed.LogSize(tb, "kueue")
	if err := testbed.StartKueue(ctx, tb, testbed.KueueOptions{}, b.Logf); err != nil {
		return err
	}
	if err := testbed.WaitLogged(ctx, tb, "kueue", logged, kueueJobSetWorkers, time.Minute); err != nil {
		return fmt.Errorf("Kueue's JobSet controller did not start: %w", err)
	}
	for _, o := range []*unstructured.Unstructured{
		framework.KueueObject("ResourceFlavor", "", peersKueueQueue, map[string]any{}),
		framework.KueueObject("ClusterQueue", "", peersKueueQueue, map[string]any{
			"namespaceSelector": map[string]any{}, "stopPolicy": "Hold",
			"resourceGroups": []any{map[string]any{
				"coveredResources": []any{"cpu"},
				"flavors":          []any{map[string]any{"name": peersKueueQueue, "resources": []any{map[string]any{"name": "cpu", "nominalQuota": "1000"}}}},
			}},
		}),
	} {
		if err := c.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	return nil
}

// stopKueueAfter deletes the JobSets of ns and waits for their Workloads to go (Kueue removes
// their finalizer), then stops Kueue.
func stopKueueAfter(ctx context.Context, b *testing.B, tb testbed.Config, c client.Client, ns string) {
	if ns != "" {
		if err := c.DeleteAllOf(ctx, &jobsetv1alpha2.JobSet{}, client.InNamespace(ns), client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil {
			b.Errorf("deleting the JobSets of %s: %v", ns, err)
		}
		if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
			return countObjects(ctx, c, kueueWorkloads.GroupVersion().WithKind("WorkloadList"), ns, nil) == 0, nil
		}); err != nil {
			b.Errorf("the Workloads of %s not gone: %v", ns, err)
		}
	}
	stopped(b, "Kueue", testbed.StopKueue(ctx, tb))
}

// volcanoJob is a Volcano Job of the same 4 pods as gangJobSet (2 tasks of 2), a gang of 4, its
// defaults filled in as Volcano's admission webhook would (queue, scheduler, maxRetry).
func volcanoJob(ns, name string) *unstructured.Unstructured {
	task := func(t string) any {
		return map[string]any{"name": t, "replicas": int64(2), "template": map[string]any{"spec": map[string]any{
			"schedulerName": testbed.VolcanoSchedulerName, "restartPolicy": "Never",
			"containers": []any{map[string]any{
				"name": "main", "image": "registry.k8s.io/pause:3.10",
				"resources": map[string]any{"requests": map[string]any{"cpu": "1"}},
			}},
		}}}
	}
	j := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{
		"schedulerName": testbed.VolcanoSchedulerName, "queue": "default", "minAvailable": int64(4), "maxRetry": int64(3),
		"tasks": []any{task("w0"), task("w1")},
	}}}
	j.SetGroupVersionKind(volcanoJobs.GroupVersion().WithKind("Job"))
	j.SetNamespace(ns)
	j.SetName(name)
	return j
}

// vcControllerManager is the path of Volcano's controller-manager.
func vcControllerManager(b *testing.B) string {
	bin := os.Getenv(vcControllerManagerEnv)
	if bin == "" {
		b.Fatalf("%s is not set: run through `make bench ADDON=peers`, which builds Volcano's controller-manager", vcControllerManagerEnv)
	}
	return bin
}

// volcanoJobsPeer: Volcano's job controller making a PodGroup for each of n Volcano Jobs.
func volcanoJobsPeer(b *testing.B, tb testbed.Config, c client.Client, n int) peerSide {
	bin := vcControllerManager(b)
	var last string // the namespace of the last window, emptied at teardown
	return peerSide{
		name: "Volcano job controller", procs: []string{testbed.VolcanoControllersComm},
		setup: func(ctx context.Context, b *testing.B) (func(), error) {
			if err := testbed.StartVolcanoControllers(ctx, tb, bin); err != nil {
				return nil, err
			}
			return func() {
				stopped(b, "Volcano's controller-manager", testbed.StopVolcanoControllers(tb))
				clearNamespace(ctx, b, c, last)
			}, nil
		},
		run: func(ctx context.Context, b *testing.B, c client.Client, ns string) (peerResult, error) {
			last = ns
			return createUntil(ctx, tb, volcanoPodGroup, ns, nil, n, func(i int) error {
				return c.Create(ctx, volcanoJob(ns, fmt.Sprintf("vj-%d", i)))
			})
		},
	}
}

// stripFinalizers removes the finalizers of every object of gvr in ns (Kueue's, on its
// Workloads, while Kueue is down).
func stripFinalizers(ctx context.Context, c client.Client, gvk schema.GroupVersionKind, ns string) error {
	var l metav1.PartialObjectMetadataList
	l.SetGroupVersionKind(gvk)
	if err := c.List(ctx, &l, client.InNamespace(ns)); err != nil {
		return err
	}
	for i := range l.Items {
		o := &l.Items[i]
		if len(o.Finalizers) == 0 {
			continue
		}
		o.SetGroupVersionKind(gvk.GroupVersion().WithKind(strings.TrimSuffix(gvk.Kind, "List")))
		if err := c.Patch(ctx, o, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`))); client.IgnoreNotFound(err) != nil {
			return err
		}
	}
	return nil
}

// gangPeerKinds are the kinds a podgroups peer side leaves in its namespace, the sources first.
var gangPeerKinds = []schema.GroupVersionKind{
	jobsetv1alpha2.GroupVersion.WithKind("JobSetList"), volcanoJobs.GroupVersion().WithKind("JobList"),
	batchv1.SchemeGroupVersion.WithKind("JobList"),
	volcanoPodGroupList, coschedPodGroupList, nativePodGroupList, nativeWorkloadList,
	kueueWorkloads.GroupVersion().WithKind("WorkloadList"),
}

// clearNamespace deletes, each kind at once (a delete collection), what a side left in ns and
// waits until it is gone: the namespace's own deletion, object by object through the garbage
// collector, took minutes for 500 JobSets and their 1,000 Jobs on the loaded 2-core machine. A
// kind the API server does not serve is skipped.
func clearNamespace(ctx context.Context, b *testing.B, c client.Client, ns string) {
	if ns == "" {
		return
	}
	for _, k := range gangPeerKinds {
		if err := deleteAllIn(ctx, c, k, ns, nil); err != nil && !meta.IsNoMatchError(err) && !apierrors.IsNotFound(err) {
			b.Errorf("deleting the %s of %s: %v", k.Kind, ns, err)
		}
	}
	for _, k := range gangPeerKinds {
		_ = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
			return countObjects(ctx, c, k, ns, nil) <= 0, nil
		})
	}
}
