package bench

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	coschedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"
	volcanov1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/jobset-addons/jobset-addons/e2e/framework"
	"github.com/jobset-addons/jobset-addons/e2e/testbed"
	"github.com/jobset-addons/jobset-addons/pkg/addon/addontest"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// The podgroups controller's own defaults (controllers/podgroups/main.go), which the bare
// client below gets too.
const pgQPS, pgBurst = 200, 400

var (
	volcanoPodGroupList = volcanov1beta1.SchemeGroupVersion.WithKind("PodGroupList")
	coschedPodGroupList = coschedv1alpha1.SchemeGroupVersion.WithKind("PodGroupList")
)

// BenchmarkPodGroups runs the podgroups controller on the testbed (Volcano's CRDs installed; no
// gang scheduler runs, so that none adds load) and prints its table. PODGROUPS_BENCH=create,update
// picks some scenarios.
func BenchmarkPodGroups(b *testing.B) {
	ctx := context.Background()
	_, _, tb := clients(b)
	if err := testbed.InstallGangCRDs(ctx, tb); err != nil {
		b.Fatal(err)
	}
	runAddonBench(b, "podgroups", []scenario{
		{"create", func(e benchEnv) []row {
			return podGroupsVersusBare(e.ctx, e.b, e.c, e.cs, e.tb, contract.SchedulerVolcano, 500, 0)
		}},
		{"update", func(e benchEnv) []row { return updateWhileSuspended(e.ctx, e.b, e.c, e.tb) }},
		{"kubernetes", func(e benchEnv) []row { return nativeVersusBare(e.ctx, e.b, e.c, e.cs, e.tb, 500, 0) }},
		{"coscheduling", func(e benchEnv) []row {
			return podGroupsVersusBare(e.ctx, e.b, e.c, e.cs, e.tb, contract.SchedulerCoscheduling, 500, 0)
		}},
	})
}

// gangJobSet is a suspended Volcano JobSet of one Indexed ReplicatedJob: 2 Jobs of pods pods.
func gangJobSet(ns, name string, pods int32) *jobsetv1alpha2.JobSet {
	return gangJobSetOf(contract.SchedulerVolcano, ns, name, pods)
}

// gangJobSetOf is gangJobSet gang-scheduled by s.
func gangJobSetOf(s contract.Scheduler, ns, name string, pods int32) *jobsetv1alpha2.JobSet {
	return addontest.JobSet(ns, name).Annotation(contract.SchedulerAnnotationKey, string(s)).Suspend(true).ReplicatedJobs(
		addontest.ReplicatedJob("w").Replicas(2).Pods(pods).BackoffLimit(nil).Requests("1", ""),
	).Obj()
}

// podGroupsVersusBare: n suspended JobSets of a second scheduler's gang (Volcano, or
// coscheduling). First the end-to-end figures: from the first JobSet create until all n
// PodGroups exist, with the JobSets' own admission, and each PodGroup's lag behind its JobSet.
// Then the controller's own rate, against a bare client: the controller is stopped, the n
// PodGroups deleted, and the controller started again; from the moment it acts (its workers
// start on synced caches, with the Lease) until all n exist again, against a bare client-go
// loop creating n PodGroups with the controller's QPS and burst, from its start, in rounds
// (0: benchRounds()). The cold start
// (process start, listing n JobSets and 2n Jobs, taking the Lease) is a row of its own: a cost
// per start, not per PodGroup, that the bare loop does not pay.
func podGroupsVersusBare(ctx context.Context, b *testing.B, c client.Client, cs kubernetes.Interface, tb testbed.Config, s contract.Scheduler, n, rounds int) []row {
	ns := namespace(ctx, b, c, "bench-pg-"+string(s))
	ours := client.MatchingLabels{contract.ManagedByLabelKey: contract.PodGroupsManagedByValue}
	list, pgList := volcanoPodGroupList, client.ObjectList(&volcanov1beta1.PodGroupList{})
	if s == contract.SchedulerCoscheduling {
		list, pgList = coschedPodGroupList, &coschedv1alpha1.PodGroupList{}
	}
	seen := newArrivals()
	for kind, l := range map[string]client.ObjectList{"jobset": &jobsetv1alpha2.JobSetList{}, "podgroup": pgList} {
		seen.follow(kind, watchList(ctx, b, tb, l, ns))
	}
	defer seen.stop()
	start := time.Now()
	if err := createParallel(n, 8, func(i int) error { return c.Create(ctx, gangJobSetOf(s, ns, fmt.Sprintf("pg-%d", i), 2)) }); err != nil {
		b.Fatal(err)
	}
	admitted := time.Since(start)
	endToEnd := timeUntil(ctx, b, c, start, list, ns, ours, n)
	time.Sleep(time.Second) // the watch may trail the list
	lags := seen.pairLags("jobset/", "podgroup/")
	seen.stop()

	// The controller's own rate, from a start with n JobSets and no PodGroup, once the JobSet
	// controller made their Jobs and the cluster is quiet, against the bare loop.
	jobSets := quietJobSets(ctx, b, c, ns, n)
	// The bare loop creates the very PodGroups the controller makes (name, labels, annotations,
	// owner reference to the JobSet, spec), in the same namespace.
	res := restartBench{
		addon: "podgroups", ns: ns, list: list, resource: "podgroups", ours: ours, n: n,
		watches: []schema.GroupVersionResource{list.GroupVersion().WithResource("podgroups")},
		qps:     pgQPS, burst: pgBurst,
		bare: bareCreates(b, func(bare client.Client, i int) error {
			js := &jobSets.Items[i]
			meta := metav1.ObjectMeta{
				Namespace: ns, Name: js.Name,
				Labels:          map[string]string{contract.ManagedByLabelKey: contract.PodGroupsManagedByValue, contract.JobSetNameLabelKey: js.Name},
				Annotations:     map[string]string{contract.PodGroupSpecHashAnnotationKey: "0123456789abcdef"},
				OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(js, jobsetv1alpha2.GroupVersion.WithKind("JobSet"))},
			}
			minResources := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")}
			if s == contract.SchedulerCoscheduling {
				return bare.Create(ctx, &coschedv1alpha1.PodGroup{ObjectMeta: meta, Spec: coschedv1alpha1.PodGroupSpec{MinMember: 4, MinResources: minResources}})
			}
			return bare.Create(ctx, &volcanov1beta1.PodGroup{ObjectMeta: meta, Spec: volcanov1beta1.PodGroupSpec{MinMember: 4, Queue: "default", MinResources: &minResources}})
		}),
		eventReason: "PodGroupCreated", events: n, rounds: rounds,
	}.run(ctx, b, c, tb, cs)
	h, err := addonHistogram(ctx, tb, "podgroups", "jobset_addons_podgroups_reconcile_duration_seconds", `result="success"`)
	if err != nil {
		b.Fatal(err)
	}
	where := []row{{what: fmt.Sprintf("  its reconciles in the last round, p50/p99 (%d)", int(h.count)), ours: fmtSeconds(h.quantile(0.5)) + " / " + fmtSeconds(h.quantile(0.99)), target: "-"}}
	return append(res.rows(fmt.Sprintf("%d PodGroups (%s), QPS %d", n, s, pgQPS), "ratio >= 0.9", n), append(where, []row{
		{what: fmt.Sprintf("%d JobSets created to %d PodGroups, end to end", n, n), ours: endToEnd.Round(time.Millisecond).String(), target: "-"},
		{what: fmt.Sprintf("  the %d JobSets created (their admission included)", n), ours: admitted.Round(time.Millisecond).String(), target: "-"},
		{what: fmt.Sprintf("  PodGroup minus its JobSet's arrival, p50/p99 (%d)", len(lags)), ours: quantile(lags, 0.5).Round(time.Millisecond).String() + " / " + quantile(lags, 0.99).Round(time.Millisecond).String(), target: "-"},
	}...)...)
}

// pairLags is, for every object first seen under prefix a and one of the same name under b,
// the time from a's arrival to b's.
func (a *arrivals) pairLags(pa, pb string) []time.Duration {
	a.mu.Lock()
	defer a.mu.Unlock()
	var lags []time.Duration
	for key, t := range a.when {
		if len(key) > len(pa) && key[:len(pa)] == pa {
			if tb, ok := a.when[pb+key[len(pa):]]; ok {
				lags = append(lags, tb.Sub(t))
			}
		}
	}
	return lags
}

// updateWhileSuspended: 100 suspended JobSets change parallelism from 2 to 3 (as Kueue does),
// 10 per second; for each, the time from the update's answer until a watch shows its PodGroup
// at minMember 6.
func updateWhileSuspended(ctx context.Context, b *testing.B, c client.Client, tb testbed.Config) []row {
	const n = 100
	ns := namespace(ctx, b, c, "bench-pg-update")
	ours := client.MatchingLabels{contract.ManagedByLabelKey: contract.PodGroupsManagedByValue}
	if err := createParallel(n, 8, func(i int) error { return c.Create(ctx, gangJobSet(ns, fmt.Sprintf("up-%d", i), 2)) }); err != nil {
		b.Fatal(err)
	}
	timeUntil(ctx, b, c, time.Now(), volcanoPodGroupList, ns, ours, n)

	w := watchList(ctx, b, tb, &volcanov1beta1.PodGroupList{}, ns)
	defer w.Stop()
	var mu sync.Mutex
	grown := map[string]time.Time{}
	go func() {
		for ev := range w.ResultChan() {
			if pg, ok := ev.Object.(*volcanov1beta1.PodGroup); ok && pg.Spec.MinMember == 6 {
				mu.Lock()
				if _, ok := grown[pg.Name]; !ok {
					grown[pg.Name] = time.Now()
				}
				mu.Unlock()
			}
		}
	}()
	changed := map[string]time.Time{}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for i := range n {
		<-tick.C
		js := &jobsetv1alpha2.JobSet{}
		name := fmt.Sprintf("up-%d", i)
		for {
			if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, js); err != nil {
				b.Fatal(err)
			}
			js.Spec.ReplicatedJobs[0].Template.Spec.Parallelism = ptr.To[int32](3)
			js.Spec.ReplicatedJobs[0].Template.Spec.Completions = ptr.To[int32](3)
			err := c.Update(ctx, js)
			if err == nil {
				break
			}
			if !apierrors.IsConflict(err) {
				b.Fatal(err)
			}
		}
		changed[name] = time.Now()
	}
	if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		mu.Lock()
		defer mu.Unlock()
		return len(grown) == n, nil
	}); err != nil {
		b.Fatalf("PodGroups updated: %d of %d", len(grown), n)
	}
	mu.Lock()
	defer mu.Unlock()
	var lags []time.Duration
	for name, at := range changed {
		lags = append(lags, grown[name].Sub(at))
	}
	return []row{{
		what:   fmt.Sprintf("spec change while suspended to PodGroup updated, p50/p99 (%d)", n),
		ours:   quantile(lags, 0.5).Round(time.Millisecond).String() + " / " + quantile(lags, 0.99).Round(time.Millisecond).String(),
		target: "p99 <= 1s",
	}}
}

// watchList starts a watch of list's kind in ns on the testbed, from now; stop it when done.
// A watch the apiserver ends (one that read too slowly on a loaded machine is closed by it,
// and a resourceclaims run lost 87 of 300 Jobs so) is started again where it ended, from the
// last resourceVersion it delivered (client-go's RetryWatcher), so that no event is lost; the
// events of such a gap arrive late, by a second or more.
func watchList(ctx context.Context, b *testing.B, tb testbed.Config, list client.ObjectList, ns string) watch.Interface {
	rc, err := tb.RESTConfig()
	if err != nil {
		b.Fatal(err)
	}
	wc, err := client.NewWithWatch(rc, client.Options{Scheme: framework.Scheme})
	if err != nil {
		b.Fatal(err)
	}
	// The watch starts at the list's resourceVersion: a watch without one would start with
	// every object there (none yet, here), and a RetryWatcher needs one to resume from.
	now := list.DeepCopyObject().(client.ObjectList)
	if err := wc.List(ctx, now, client.InNamespace(ns), client.Limit(1)); err != nil {
		b.Fatal(err)
	}
	w, err := watchtools.NewRetryWatcherWithContext(ctx, now.GetResourceVersion(), &cache.ListWatch{
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			return wc.Watch(ctx, list.DeepCopyObject().(client.ObjectList), client.InNamespace(ns), &client.ListOptions{Raw: &opts})
		},
	})
	if err != nil {
		b.Fatal(err)
	}
	return w
}

var (
	nativePodGroupList = schedulingv1beta1.SchemeGroupVersion.WithKind("PodGroupList")
	nativeWorkloadList = schedulingv1beta1.SchemeGroupVersion.WithKind("WorkloadList")
)

// nativeVersusBare: the kubernetes backend, n suspended JobSets: the time from the first
// JobSet create until n PodGroups (and their Workloads) exist, then the controller's own rate
// against a bare loop that makes the very same Workload and PodGroup per JobSet (name, labels,
// annotations, owner, controllerRef, workloadRef, gang minCount), in rounds as for Volcano; the
// count that stops each clock is of PodGroups, each made after its Workload.
func nativeVersusBare(ctx context.Context, b *testing.B, c client.Client, cs kubernetes.Interface, tb testbed.Config, n, rounds int) []row {
	ns := namespace(ctx, b, c, "bench-native")
	ours := client.MatchingLabels{contract.ManagedByLabelKey: contract.PodGroupsManagedByValue}
	start := time.Now()
	if err := createParallel(n, 8, func(i int) error {
		return c.Create(ctx, gangJobSetOf(contract.SchedulerKubernetes, ns, fmt.Sprintf("wl-%d", i), 2))
	}); err != nil {
		b.Fatal(err)
	}
	endToEnd := timeUntil(ctx, b, c, start, nativePodGroupList, ns, ours, n)
	if got := countObjects(ctx, c, nativeWorkloadList, ns, ours); got != n {
		b.Fatalf("%d Workloads for %d PodGroups", got, n)
	}
	jobSets := quietJobSets(ctx, b, c, ns, n)
	gang := schedulingv1beta1.PodGroupSchedulingPolicy{Gang: &schedulingv1beta1.GangSchedulingPolicy{MinCount: 4}}
	res := restartBench{
		addon: "podgroups", ns: ns, list: nativePodGroupList, resource: "podgroups", ours: ours, n: n,
		also: []schema.GroupVersionKind{nativeWorkloadList},
		watches: []schema.GroupVersionResource{
			nativePodGroupList.GroupVersion().WithResource("podgroups"), nativeWorkloadList.GroupVersion().WithResource("workloads"),
		},
		qps: pgQPS, burst: pgBurst,
		bare: bareCreates(b, func(bare client.Client, i int) error {
			js := &jobSets.Items[i]
			meta := metav1.ObjectMeta{
				Namespace: ns, Name: js.Name,
				Labels:          map[string]string{contract.ManagedByLabelKey: contract.PodGroupsManagedByValue, contract.JobSetNameLabelKey: js.Name},
				Annotations:     map[string]string{contract.PodGroupSpecHashAnnotationKey: "0123456789abcdef"},
				OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(js, jobsetv1alpha2.GroupVersion.WithKind("JobSet"))},
			}
			if err := bare.Create(ctx, &schedulingv1beta1.Workload{ObjectMeta: meta, Spec: schedulingv1beta1.WorkloadSpec{
				ControllerRef:     &schedulingv1beta1.TypedLocalObjectReference{APIGroup: jobsetv1alpha2.GroupVersion.Group, Kind: "JobSet", Name: js.Name},
				PodGroupTemplates: []schedulingv1beta1.PodGroupTemplate{{Name: "stage-0", SchedulingPolicy: gang}},
			}}); err != nil {
				return err
			}
			return bare.Create(ctx, &schedulingv1beta1.PodGroup{ObjectMeta: *meta.DeepCopy(), Spec: schedulingv1beta1.PodGroupSpec{
				WorkloadRef:      &schedulingv1beta1.WorkloadReference{WorkloadName: js.Name, TemplateName: "stage-0"},
				SchedulingPolicy: *gang.DeepCopy(),
			}})
		}),
		eventReason: "PodGroupCreated", events: n, rounds: rounds,
	}.run(ctx, b, c, tb, cs)
	return append(res.rows(fmt.Sprintf("%d Workloads + %d PodGroups (kubernetes), QPS %d", n, n, pgQPS), "ratio >= 0.9", n),
		row{what: fmt.Sprintf("%d kubernetes JobSets created to %d PodGroups (after their Workloads), end to end", n, n), ours: endToEnd.Round(time.Millisecond).String(), target: "-"})
}

// quietJobSets waits until the JobSet controller made the Jobs of the n JobSets in ns (two each)
// and the cluster is quiet, and returns the JobSets.
func quietJobSets(ctx context.Context, b *testing.B, c client.Client, ns string, n int) *jobsetv1alpha2.JobSetList {
	b.Helper()
	timeUntil(ctx, b, c, time.Now(), batchv1.SchemeGroupVersion.WithKind("JobList"), ns, nil, 2*n)
	time.Sleep(2 * time.Second)
	var jobSets jobsetv1alpha2.JobSetList
	if err := c.List(ctx, &jobSets, client.InNamespace(ns)); err != nil {
		b.Fatal(err)
	}
	if len(jobSets.Items) != n {
		b.Fatalf("%d JobSets, want %d", len(jobSets.Items), n)
	}
	return &jobSets
}

// bareCreates is a restartBench bare loop: create(i) makes the i-th object through a client of
// its own, with the rest.Config the bench gives it.
func bareCreates(b *testing.B, create func(bare client.Client, i int) error) func(rc *rest.Config) func(i int) error {
	return func(rc *rest.Config) func(i int) error {
		bare, err := client.New(rc, client.Options{Scheme: framework.Scheme})
		if err != nil {
			b.Fatal(err)
		}
		return func(i int) error { return create(bare, i) }
	}
}
