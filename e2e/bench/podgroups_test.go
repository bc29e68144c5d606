package bench

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	volcanov1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/jobset-addons/jobset-addons/e2e/framework"
	"github.com/jobset-addons/jobset-addons/e2e/testbed"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// The podgroups controller's own defaults (controllers/podgroups/main.go), which the bare
// client below gets too.
const pgQPS, pgBurst = 200, 400

var volcanoPodGroupList = volcanov1beta1.SchemeGroupVersion.WithKind("PodGroupList")

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
		{"create", func(e benchEnv) []row { return podGroupsVersusBare(e.ctx, e.b, e.c, e.tb) }},
		{"update", func(e benchEnv) []row { return updateWhileSuspended(e.ctx, e.b, e.c, e.tb) }},
	})
}

// gangJobSet is a suspended Volcano JobSet of one Indexed ReplicatedJob: 2 Jobs of pods pods.
func gangJobSet(ns, name string, pods int32) *jobsetv1alpha2.JobSet {
	return &jobsetv1alpha2.JobSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: map[string]string{contract.SchedulerAnnotationKey: string(contract.SchedulerVolcano)}},
		Spec: jobsetv1alpha2.JobSetSpec{
			Suspend: ptr.To(true),
			ReplicatedJobs: []jobsetv1alpha2.ReplicatedJob{{
				Name: "w", Replicas: 2,
				Template: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{
					Parallelism: ptr.To(pods), Completions: ptr.To(pods), CompletionMode: ptr.To(batchv1.IndexedCompletion),
					Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
						RestartPolicy: corev1.RestartPolicyNever,
						Containers: []corev1.Container{{Name: "main", Image: "busybox", Resources: corev1.ResourceRequirements{
							Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")},
						}}},
					}},
				}},
			}},
		},
	}
}

// podGroupsVersusBare: 500 suspended Volcano JobSets. First the end-to-end figures: from the
// first JobSet create until all 500 PodGroups exist, with the JobSets' own admission, and each
// PodGroup's lag behind its JobSet. Then the controller's own rate, against a bare client: the
// controller is stopped, the 500 PodGroups deleted, and the controller started again; from the
// moment it acts (its workers start on synced caches, with the Lease) until all 500 exist again,
// against a bare client-go loop creating 500 PodGroups with the controller's QPS and burst, from
// its start. The cold start (process start, listing 500 JobSets and 1,000 Jobs, taking the
// Lease) is a row of its own: a cost per start, not per PodGroup, that the bare loop does not
// pay.
func podGroupsVersusBare(ctx context.Context, b *testing.B, c client.Client, tb testbed.Config) []row {
	const n = 500
	ns := namespace(ctx, b, c, "bench-pg")
	ours := client.MatchingLabels{contract.ManagedByLabelKey: contract.PodGroupsManagedByValue}
	seen := newArrivals()
	for kind, list := range map[string]client.ObjectList{"jobset": &jobsetv1alpha2.JobSetList{}, "podgroup": &volcanov1beta1.PodGroupList{}} {
		w := watchList(ctx, b, tb, list, ns)
		defer w.Stop()
		go seen.record(kind, w)
	}
	start := time.Now()
	if err := createParallel(n, 8, func(i int) error { return c.Create(ctx, gangJobSet(ns, fmt.Sprintf("pg-%d", i), 2)) }); err != nil {
		b.Fatal(err)
	}
	admitted := time.Since(start)
	endToEnd := timeUntil(ctx, b, c, start, volcanoPodGroupList, ns, ours, n)
	time.Sleep(time.Second) // the watch may trail the list
	lags := seen.pairLags("jobset/", "podgroup/")

	// The controller's own rate, from a start with 500 JobSets and no PodGroup, once the JobSet
	// controller made their Jobs and the cluster is quiet, against the bare loop just before it.
	timeUntil(ctx, b, c, time.Now(), batchv1.SchemeGroupVersion.WithKind("JobList"), ns, nil, 2*n)
	time.Sleep(2 * time.Second)
	if err := testbed.StopAddon(ctx, tb, "podgroups"); err != nil {
		b.Fatal(err)
	}
	deletePodGroups(ctx, b, c, ns, ours)
	// The bare loop creates the very PodGroups the controller makes (name, labels, annotations,
	// owner reference to the JobSet, spec), in the same namespace, then they are deleted again.
	var jobSets jobsetv1alpha2.JobSetList
	if err := c.List(ctx, &jobSets, client.InNamespace(ns)); err != nil {
		b.Fatal(err)
	}
	if len(jobSets.Items) != n {
		b.Fatalf("%d JobSets, want %d", len(jobSets.Items), n)
	}
	rc, err := tb.RESTConfig()
	if err != nil {
		b.Fatal(err)
	}
	rc.QPS, rc.Burst = pgQPS, pgBurst
	bare, err := client.New(rc, client.Options{Scheme: framework.Scheme})
	if err != nil {
		b.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		b.Fatal(err)
	}
	serverSide := func() histogram {
		raw, err := cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
		if err != nil {
			b.Fatal(err)
		}
		return parseHistogram(string(raw), "apiserver_request_duration_seconds", `resource="podgroups",scope="resource",subresource="",verb="POST"`)
	}
	// Rounds of bare loop, then controller, on the same cluster; the medians are compared.
	var bareTimes, workings, restarts, starteds, actings, firsts, eventsDones []time.Duration
	var bareServer, oursServer histogram
	for round := range benchRounds() {
		if round > 0 {
			if err := testbed.StopAddon(ctx, tb, "podgroups"); err != nil {
				b.Fatal(err)
			}
			deletePodGroups(ctx, b, c, ns, ours)
			time.Sleep(time.Second)
		}
		beforeBare := serverSide()
		start := time.Now()
		if err := createParallel(n, 16, func(i int) error {
			js := &jobSets.Items[i]
			return bare.Create(ctx, &volcanov1beta1.PodGroup{
				ObjectMeta: metav1.ObjectMeta{
					Namespace: ns, Name: js.Name,
					Labels:          map[string]string{contract.ManagedByLabelKey: contract.PodGroupsManagedByValue, contract.JobSetNameLabelKey: js.Name},
					Annotations:     map[string]string{contract.PodGroupSpecHashAnnotationKey: "0123456789abcdef"},
					OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(js, jobsetv1alpha2.GroupVersion.WithKind("JobSet"))},
				},
				Spec: volcanov1beta1.PodGroupSpec{MinMember: 4, Queue: "default", MinResources: &corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")}},
			})
		}); err != nil {
			b.Fatal(err)
		}
		bareTimes = append(bareTimes, timeUntil(ctx, b, c, start, volcanoPodGroupList, ns, ours, n))
		bareServer = bareServer.plus(serverSide().minus(beforeBare))
		deletePodGroups(ctx, b, c, ns, ours)
		time.Sleep(time.Second)

		// The clock starts as the process is started: the harness's own preparation
		// (certificate, chart render, ServiceAccount token) is done before.
		addon, err := testbed.PrepareAddon(ctx, tb, "podgroups", addonArgs()...)
		if err != nil {
			b.Fatal(err)
		}
		beforeOurs := serverSide()
		start = time.Now()
		if err := addon.Start(ctx, nil); err != nil {
			b.Fatal(err)
		}
		starteds = append(starteds, time.Since(start))
		firsts = append(firsts, timeUntil(ctx, b, c, start, volcanoPodGroupList, ns, ours, 1))
		restart := timeUntil(ctx, b, c, start, volcanoPodGroupList, ns, ours, n)
		oursServer = oursServer.plus(serverSide().minus(beforeOurs))
		acting, err := workersStarted(tb, "podgroups")
		if err != nil {
			b.Fatal(err)
		}
		restarts = append(restarts, restart)
		actings = append(actings, acting.Sub(start))
		// From the moment the controller acts (caches synced, Lease held) to the last
		// PodGroup: the work the bare loop does, from its start to its last PodGroup.
		workings = append(workings, restart-acting.Sub(start))
		// The next round starts once this one's Events are written.
		eventsDones = append(eventsDones, eventsUntil(ctx, b, c, start, ns, "PodGroupCreated", n))
	}
	bareTime, working, restart := median(bareTimes), median(workings), median(restarts)
	// Where the controller's time went, from its own metrics.
	where := []row{{what: "  apiserver time of a PodGroup POST, p50/p99", ours: fmtSeconds(oursServer.quantile(0.5)) + " / " + fmtSeconds(oursServer.quantile(0.99)),
		baseline: fmtSeconds(bareServer.quantile(0.5)) + " / " + fmtSeconds(bareServer.quantile(0.99)), target: "-"}}
	for _, m := range []struct{ what, metric, match string }{
		{"  its reconciles, p50/p99", "jobset_addons_podgroups_reconcile_duration_seconds", `result="success"`},
	} {
		h, err := addonHistogram(ctx, tb, "podgroups", m.metric, m.match)
		if err != nil {
			b.Fatal(err)
		}
		where = append(where, row{what: fmt.Sprintf("%s (%d)", m.what, int(h.count)), ours: fmtSeconds(h.quantile(0.5)) + " / " + fmtSeconds(h.quantile(0.99)), target: "-"})
	}
	return append([]row{
		{
			what:     fmt.Sprintf("%d PodGroups, from the controller's workers starting, QPS %d (median of %d)", n, pgQPS, len(workings)),
			ours:     working.Round(time.Millisecond).String(),
			baseline: bareTime.Round(time.Millisecond).String() + " bare",
			ratio:    fmt.Sprintf("%.2f", bareTime.Seconds()/working.Seconds()),
			target:   "ratio >= 0.9",
		},
		{what: "  each round, ours vs bare", ours: roundRatios(workings, bareTimes), target: "-"},
		{
			what:     fmt.Sprintf("%d PodGroups, from the process starting (cold start)", n),
			ours:     restart.Round(time.Millisecond).String(),
			baseline: bareTime.Round(time.Millisecond).String() + " bare",
			ratio:    fmt.Sprintf("%.2f", bareTime.Seconds()/restart.Seconds()),
			target:   "-",
		},
		{what: "  of which the process started and answered readyz", ours: median(starteds).Round(time.Millisecond).String(), target: "-"},
		{what: "  the workers started (caches of 500 JobSets and 1,000 Jobs synced, Lease taken)", ours: median(actings).Round(time.Millisecond).String(), target: "-"},
		{what: "  the first PodGroup made", ours: median(firsts).Round(time.Millisecond).String(), target: "-"},
		{what: fmt.Sprintf("  all %d PodGroupCreated Events written (--event-qps)", n), ours: median(eventsDones).Round(time.Millisecond).String(), target: "-"},
	}, append(where, []row{
		{what: fmt.Sprintf("%d JobSets created to %d PodGroups, end to end", n, n), ours: endToEnd.Round(time.Millisecond).String(), target: "-"},
		{what: fmt.Sprintf("  the %d JobSets created (their admission included)", n), ours: admitted.Round(time.Millisecond).String(), target: "-"},
		{what: fmt.Sprintf("  PodGroup minus its JobSet's arrival, p50/p99 (%d)", len(lags)), ours: quantile(lags, 0.5).Round(time.Millisecond).String() + " / " + quantile(lags, 0.99).Round(time.Millisecond).String(), target: "-"},
	}...)...)
}

// eventsUntil polls until n events.k8s.io Events of reason in ns were observed at or after start,
// and returns the time from start.
func eventsUntil(ctx context.Context, b *testing.B, c client.Client, start time.Time, ns, reason string, n int) time.Duration {
	count := func(ctx context.Context) int {
		var list eventsv1.EventList
		if err := c.List(ctx, &list, client.InNamespace(ns)); err != nil {
			return -1
		}
		got := 0
		for _, e := range list.Items {
			if e.Reason == reason && !e.EventTime.Time.Before(start.Truncate(time.Microsecond)) {
				got++
			}
		}
		return got
	}
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
		return count(ctx) >= n, nil
	}); err != nil {
		b.Fatalf("waiting for %d %s Events in %s: %v (have %d)", n, reason, ns, err, count(ctx))
	}
	return time.Since(start)
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

// watchList starts a watch of list's kind in ns on the testbed; stop it when done.
func watchList(ctx context.Context, b *testing.B, tb testbed.Config, list client.ObjectList, ns string) watch.Interface {
	rc, err := tb.RESTConfig()
	if err != nil {
		b.Fatal(err)
	}
	wc, err := client.NewWithWatch(rc, client.Options{Scheme: framework.Scheme})
	if err != nil {
		b.Fatal(err)
	}
	w, err := wc.Watch(ctx, list, client.InNamespace(ns))
	if err != nil {
		b.Fatal(err)
	}
	return w
}

// deletePodGroups deletes the Volcano PodGroups in ns with labels and waits until they are gone.
func deletePodGroups(ctx context.Context, b *testing.B, c client.Client, ns string, labels client.MatchingLabels) {
	if err := c.DeleteAllOf(ctx, &volcanov1beta1.PodGroup{}, client.InNamespace(ns), labels); err != nil {
		b.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		return countObjects(ctx, c, volcanoPodGroupList, ns, labels) == 0, nil
	}); err != nil {
		b.Fatal(err)
	}
}
