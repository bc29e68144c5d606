package bench

import (
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	resourcev1 "k8s.io/api/resource/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	coschedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"github.com/jobset-addons/jobset-addons/e2e/testbed"
	"github.com/jobset-addons/jobset-addons/pkg/addon/addontest"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// The mixed load of BenchmarkScale: many JobSets using the four add-ons, created at a rate,
// their requests counted against the minimum each needs.

// Stages of the mixed load's JobSet: 8 pods in 4 Jobs, run in this order.
var mixedStages = []struct {
	name       string
	jobs, pods int
}{{"s0", 1, 2}, {"s1", 2, 2}, {"s2", 1, 2}}

// mixedJobSet is one JobSet of the mixed load. With addons it uses all four: a shared PVC
// (data, mounted by every pod) and a per-pod PVC (ckpt, on s1), both of instantClass, a
// claim per Job (dev), the three stages in order (sequencer) and a gang per stage
// (podgroups). Without, it is the same JobSet with the add-ons' annotations, and the mounts
// of their volumes, removed.
func mixedJobSet(ns, name string, addons bool, gang contract.Scheduler) *jobsetv1alpha2.JobSet {
	js := addontest.JobSet(ns, name)
	if addons {
		js.Annotation(contract.PoliciesAnnotationKey, `[{templates: [{metadata: {name: data}, spec: {accessModes: [ReadWriteMany], storageClassName: `+instantClass+`, resources: {requests: {storage: 1Gi}}}}]},
  {targetReplicatedJobs: [s1], templates: [{metadata: {name: ckpt}, spec: {accessModes: [ReadWriteOnce], storageClassName: `+instantClass+`, resources: {requests: {storage: 1Gi}}}}]}]`).
			InOrder().Annotation(contract.SchedulerAnnotationKey, string(gang))
	}
	for _, st := range mixedStages {
		rj := addontest.ReplicatedJob(st.name).Replicas(int32(st.jobs)).Pods(int32(st.pods)).Requests("100m", "")
		if addons {
			rj.JobAnnotation(contract.TemplatesAnnotationKey, `[{metadata: {name: dev}, spec: {devices: {requests: [{name: dev, exactly: {deviceClassName: `+scaleDeviceClass+`}}]}}}]`).Mount("data")
			if st.name == "s1" {
				rj.Mount("ckpt")
			}
		}
		js.ReplicatedJobs(rj)
	}
	return js.Obj()
}

// mixedExpected are the objects the add-ons make for one mixed JobSet, by audit resource.
func mixedExpected(name string, gang contract.Scheduler) map[string][]string {
	out := map[string][]string{}
	add := func(resource, n string, err error) {
		if err != nil {
			panic(err)
		}
		out[resource] = append(out[resource], n)
	}
	n, err := contract.SharedVolumeClaimName("data", name)
	add("persistentvolumeclaims", n, err)
	for _, st := range mixedStages {
		for j := range st.jobs {
			n, err := contract.ResourceClaimName(fmt.Sprintf("%s-%s-%d", name, st.name, j), "dev", 0)
			add("resourceclaims.resource.k8s.io", n, err)
			if st.name != "s1" {
				continue
			}
			for p := range st.pods {
				n, err := contract.PerPodVolumeClaimName("ckpt", name, st.name, j, p)
				add("persistentvolumeclaims", n, err)
			}
		}
	}
	podGroups := "podgroups.scheduling.k8s.io"
	if gang == contract.SchedulerCoscheduling {
		podGroups = "podgroups.scheduling.x-k8s.io"
	} else {
		n, err := contract.WorkloadName(name)
		add("workloads.scheduling.k8s.io", n, err)
	}
	for s := range mixedStages {
		n, err := contract.StagePodGroupName(name, s)
		add(podGroups, n, err)
	}
	return out
}

// minimumRequests is, per add-on, the requests one mixed JobSet needs at the least, by
// "verb resource": one create per object made, one delete per object the add-on removes (the
// garbage collector removes the PVCs with the JobSet), one patch per pod released.
func minimumRequests(gang contract.Scheduler) map[string]map[string]float64 {
	jobs, gated := 0, 0
	for i, st := range mixedStages {
		jobs += st.jobs
		if i > 0 {
			gated += st.jobs * st.pods
		}
	}
	pg := map[string]float64{}
	if gang == contract.SchedulerCoscheduling {
		pg["create podgroups.scheduling.x-k8s.io"] = float64(len(mixedStages))
		pg["delete podgroups.scheduling.x-k8s.io"] = float64(len(mixedStages))
	} else {
		pg["create podgroups.scheduling.k8s.io"] = float64(len(mixedStages))
		pg["delete podgroups.scheduling.k8s.io"] = float64(len(mixedStages))
		pg["create workloads.scheduling.k8s.io"] = 1
		pg["delete workloads.scheduling.k8s.io"] = 1
	}
	return map[string]map[string]float64{
		"volumeclaims":   {"create persistentvolumeclaims": 1 + 2*2},
		"resourceclaims": {"create resourceclaims.resource.k8s.io": float64(jobs), "delete resourceclaims.resource.k8s.io": float64(jobs)},
		"sequencer":      {"patch pods": float64(gated)},
		"podgroups":      pg,
	}
}

// whyAbove names, for every request an add-on makes above the minimum, why it makes it
// (read from the add-on's code). A request above the minimum that is not here prints as
// UNEXPLAINED.
var whyAbove = map[string]string{
	"resourceclaims create resourceclaims.resource.k8s.io (dry run)": "JobSet webhook: the apiserver judges each template's first claim (dry-run create; a template accepted in the namespace is not sent again for 10 s)",
	"volumeclaims create persistentvolumeclaims (dry run)":           "JobSet webhook: the apiserver judges each template's first PVC (dry-run create; a template accepted in the namespace is not sent again for 10 s)",
	"resourceclaims patch resourceclaims.resource.k8s.io":            "claims are made ahead of their Jobs (owned by the JobSet, so pods never wait); one JSON patch per claim hands it to its Job once that exists",
	"resourceclaims get resourceclaims.resource.k8s.io":              "after a create answered 409 (below), a read of the claim to see whose it is",
	"resourceclaims create resourceclaims.resource.k8s.io":           "a second create of a claim made under 0.4 s before, answered 409 (6 of 1,000 at 250 JobSets, 3 of them one JobSet's): its Made record did not hold it back; cause not found yet",
	"resourceclaims delete resourceclaims.resource.k8s.io":           "a second delete (404) by a reconcile before the cache showed the first",
	"sequencer patch pods":                                           "a release patched again by a reconcile whose cache still showed the gate more than 5 s after the first patch (its answer came 3.6 to 5.2 s after it was sent, the cache 6 s after that); fixed since: a pod is not patched again while the cache shows it at the resourceVersion it was released from",
	"sequencer patch jobsets.jobset.x-k8s.io":                        "one per stage released (s1, s2): the released annotation, which podgroups reads to make that stage's gang and kubectl jobset-addons status shows",
	"volumeclaims get leases.coordination.k8s.io":                    "leader election: the Lease renewed every --leader-election-retry-period (5 s here, see scaleAddonArgs; 1 s by default)",
	"volumeclaims update leases.coordination.k8s.io":                 "leader election",
	"resourceclaims get leases.coordination.k8s.io":                  "leader election",
	"resourceclaims update leases.coordination.k8s.io":               "leader election",
	"sequencer get leases.coordination.k8s.io":                       "leader election",
	"sequencer update leases.coordination.k8s.io":                    "leader election",
	"podgroups get leases.coordination.k8s.io":                       "leader election",
	"podgroups update leases.coordination.k8s.io":                    "leader election",
}

// waitAllWebhooks waits until the apiserver calls every add-on's JobSet webhooks: a dry-run
// create of a mixed JobSet comes back with the volumes, the gates and the gang's fields.
func waitAllWebhooks(ctx context.Context, c client.Client, gang contract.Scheduler) error {
	var last error
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		js := mixedJobSet(corev1.NamespaceDefault, "probe", true, gang)
		if last = c.Create(ctx, js, client.DryRunAll); last != nil {
			return false, nil
		}
		s1 := js.Spec.ReplicatedJobs[1].Template.Spec.Template
		switch {
		case len(s1.Spec.Volumes) == 0:
			last = fmt.Errorf("no volumes: volumeclaims did not mutate the JobSet")
		case !slices.ContainsFunc(s1.Spec.SchedulingGates, func(g corev1.PodSchedulingGate) bool { return g.Name == contract.SequencerSchedulingGateValue }):
			last = fmt.Errorf("no gate: the sequencer did not mutate the JobSet")
		case js.Annotations[contract.VolumeClaimsAdmittedAnnotationKey] != contract.EnabledValue:
			last = fmt.Errorf("not admitted by volumeclaims")
		default:
			return true, nil
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("the add-ons' webhooks: %v (%w)", last, err)
	}
	return nil
}

// jobSetClock records when each JobSet of some namespaces finished: the lastTransitionTime of
// its Completed or Failed condition (the JobSet controller's clock, this machine's; seconds),
// read by listing the JobSets every 3 s. (A watch of them, on a starved testbed, missed updates.)
type jobSetClock struct {
	stop chan struct{}
	done chan struct{}
	mu   sync.Mutex
	end  map[string]time.Time // namespace/name
	fail map[string]bool
}

func watchJobSets(ctx context.Context, b *testing.B, c client.Client, namespaces ...string) *jobSetClock {
	jc := &jobSetClock{stop: make(chan struct{}), done: make(chan struct{}), end: map[string]time.Time{}, fail: map[string]bool{}}
	poll := func() {
		for _, ns := range namespaces {
			var list jobsetv1alpha2.JobSetList
			if err := c.List(ctx, &list, client.InNamespace(ns)); err != nil {
				continue
			}
			jc.mu.Lock()
			for _, js := range list.Items {
				for _, cond := range js.Status.Conditions {
					if cond.Status != metav1.ConditionTrue || (cond.Type != string(jobsetv1alpha2.JobSetCompleted) && cond.Type != string(jobsetv1alpha2.JobSetFailed)) {
						continue
					}
					key := ns + "/" + js.Name
					if _, ok := jc.end[key]; !ok {
						jc.end[key] = cond.LastTransitionTime.Time
						jc.fail[key] = cond.Type == string(jobsetv1alpha2.JobSetFailed)
					}
				}
			}
			jc.mu.Unlock()
		}
	}
	go func() {
		defer close(jc.done)
		t := time.NewTicker(3 * time.Second)
		defer t.Stop()
		for {
			poll()
			select {
			case <-jc.stop:
				return
			case <-t.C:
			}
		}
	}()
	return jc
}

func (jc *jobSetClock) Stop() {
	close(jc.stop)
	<-jc.done
}

// finished counts the JobSets of ns that finished, and those that failed.
func (jc *jobSetClock) finished(ns string) (done, failed int, last time.Time) {
	jc.mu.Lock()
	defer jc.mu.Unlock()
	for k, at := range jc.end {
		if strings.HasPrefix(k, ns+"/") {
			done++
			if jc.fail[k] {
				failed++
			}
			if at.After(last) {
				last = at
			}
		}
	}
	return done, failed, last
}

// unfinished names the JobSets of ns that have not finished, of those created.
func (jc *jobSetClock) unfinished(ns string, created map[string]time.Time) []string {
	jc.mu.Lock()
	defer jc.mu.Unlock()
	var out []string
	for name := range created {
		if _, ok := jc.end[ns+"/"+name]; !ok {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// durations are, for the JobSets of ns, the times from their creation to their end.
func (jc *jobSetClock) durations(ns string, created map[string]time.Time) []time.Duration {
	jc.mu.Lock()
	defer jc.mu.Unlock()
	var out []time.Duration
	for name, at := range created {
		if end, ok := jc.end[ns+"/"+name]; ok {
			out = append(out, end.Sub(at))
		}
	}
	return out
}

// mixedLoad: n JobSets with all four add-ons and n the same without, created at rate a second
// each, interleaved; then deleted. It prints the wall time, memory, CPU, API requests per
// JobSet against the minimum, Events per JobSet and the objects' count.
func mixedLoad(ctx context.Context, b *testing.B, c client.Client, cs kubernetes.Interface, tb testbed.Config, dog *addonWatchdog, gang contract.Scheduler, n int, rate float64) {
	ours, plain := namespace(ctx, b, c, "scale-ours"), namespace(ctx, b, c, "scale-plain")
	binder := startInstantBinder(ctx, b, cs, ours, 8)
	clock := watchJobSets(ctx, b, c, ours, plain)
	defer clock.Stop()

	since := time.Now()
	cpu := sampleCPU(append([]string{"kube-apiserver", "etcd", "kube-controller", "kube-scheduler", "jobset", "kwok-controller"}, testbed.Addons...)...)
	rss := sampleRSS(tb)
	rssAt := map[int]map[string]int{}
	heapAt := map[int]map[string]string{}
	created := map[string]map[string]time.Time{ours: {}, plain: {}}
	var mu sync.Mutex
	var wg sync.WaitGroup
	var failures []error
	tick := time.NewTicker(time.Duration(float64(time.Second) / rate))
	start := time.Now()
	for i := range n {
		<-tick.C
		for _, ns := range []string{ours, plain} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				name := fmt.Sprintf("m-%04d", i)
				at := time.Now()
				err := c.Create(ctx, mixedJobSet(ns, name, ns == ours, gang))
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					failures = append(failures, fmt.Errorf("%s/%s: %w", ns, name, err))
				}
				created[ns][name] = at
			}()
		}
		if i+1 == n/4 || i+1 == n {
			rssAt[i+1] = rss.now()
			heapAt[i+1] = goHeap(ctx, tb)
		}
	}
	tick.Stop()
	wg.Wait()
	createdIn := time.Since(start)
	if len(failures) > 0 {
		b.Fatalf("%d creates failed, the first: %v", len(failures), failures[0])
	}
	timeout := 10*time.Minute + 2*time.Duration(n)*time.Second
	if err := wait.PollUntilContextTimeout(ctx, time.Second, timeout, false, func(context.Context) (bool, error) {
		o, _, _ := clock.finished(ours)
		p, _, _ := clock.finished(plain)
		return o == n && p == n, nil
	}); err != nil {
		// Told, not fatal: the tables still say what the add-ons did.
		o, _, _ := clock.finished(ours)
		p, _, _ := clock.finished(plain)
		fmt.Printf("\nNOT FINISHED after %s: %d of %d JobSets with the add-ons, %d of %d without; unfinished: %s\n", timeout, o, n, p, n,
			strings.Join(clock.unfinished(ours, created[ours]), " "))
	}
	rssDone, heapDone := rss.now(), goHeap(ctx, tb)
	finishedAt := time.Now()
	_, oursFailed, oursLast := clock.finished(ours)
	_, plainFailed, plainLast := clock.finished(plain)

	// Events, as the apiserver holds them now: events.k8s.io Events by reporting controller,
	// and how many occurrences their series count.
	var evs eventsv1.EventList
	if err := c.List(ctx, &evs, client.InNamespace(ours)); err != nil {
		b.Fatal(err)
	}
	eventObjects, eventOccurrences := map[string]int{}, map[string]int{}
	eventReasons := map[string]map[string]int{}
	for _, e := range evs.Items {
		addon, _, _ := strings.Cut(e.ReportingController, ".")
		eventObjects[addon]++
		occ := 1
		if e.Series != nil {
			occ = int(e.Series.Count)
		}
		eventOccurrences[addon] += occ
		if eventReasons[addon] == nil {
			eventReasons[addon] = map[string]int{}
		}
		eventReasons[addon][e.Reason] += occ
	}
	// The objects made, before the JobSets go: PVCs stay (retained on completion), claims and
	// PodGroups went with their Jobs and stages.
	pvcsNow := countObjects(ctx, c, pvcList, ours, client.MatchingLabels{contract.ManagedByLabelKey: contract.VolumeClaimsManagedByValue})

	// The restarts' requests are not of the load: left out of its tables.
	var restartFrom, restartTo time.Time
	if os.Getenv("SCALE_RESTART") != "0" {
		dog.pause(true)
		restartFrom, restartTo = restartCatchUp(ctx, b, tb, n, since)
		dog.pause(false)
	}

	// Delete every JobSet, and wait until nothing of them is left.
	delStart := time.Now()
	for _, ns := range []string{ours, plain} {
		// A collection delete of 1,000 JobSets outlasted the apiserver's 60 s request timeout:
		// the apiserver goes on deleting, and the wait below tells what is left.
		if err := c.DeleteAllOf(ctx, &jobsetv1alpha2.JobSet{}, client.InNamespace(ns), client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil && !apierrors.IsTimeout(err) && !apierrors.IsServerTimeout(err) {
			b.Fatal(err)
		}
	}
	leftKinds := map[string]client.ObjectList{
		"JobSets": &jobsetv1alpha2.JobSetList{}, "Jobs": &batchv1.JobList{}, "Pods": &corev1.PodList{},
		"PVCs": &corev1.PersistentVolumeClaimList{}, "ResourceClaims": &resourcev1.ResourceClaimList{},
	}
	if gang == contract.SchedulerCoscheduling {
		leftKinds["PodGroups"] = &coschedv1alpha1.PodGroupList{}
	} else {
		leftKinds["PodGroups"] = &schedulingv1beta1.PodGroupList{}
		leftKinds["Workloads"] = &schedulingv1beta1.WorkloadList{}
	}
	left := map[string]int{}
	_ = wait.PollUntilContextTimeout(ctx, time.Second, 10*time.Minute, true, func(ctx context.Context) (bool, error) {
		total := 0
		for kind, list := range leftKinds {
			if err := c.List(ctx, list, client.InNamespace(ours)); err != nil {
				return false, nil
			}
			left[kind] = apimeta.LenList(list)
			total += left[kind]
		}
		return total == 0, nil
	})
	deleted := time.Since(delStart)
	time.Sleep(5 * time.Second) // the add-ons' last reconciles of the deleted JobSets
	end := time.Now()
	binderDone := binder.Stop(ctx)
	peak := rss.Stop()
	cpu.Stop()
	used := cpu.between(since, end)
	usedToDone := cpu.between(since, finishedAt)

	audit, err := testbed.AuditRequests(tb, since)
	if err != nil {
		b.Fatal(err)
	}

	// Wall time.
	oursD, plainD := clock.durations(ours, created[ours]), clock.durations(plain, created[plain])
	gangName := string(gang)
	fmt.Printf("\nscale: mixed load, %d JobSets with all four add-ons (gang: %s) and %d without, %d pods each, created at %.0f/s each (in %s)\n",
		n, gangName, n, 8, rate, createdIn.Round(time.Millisecond))
	printTable("wall time", []row{
		{what: fmt.Sprintf("every JobSet finished, from the first create (%d each)", n), ours: oursLast.Sub(start).Round(time.Millisecond).String(),
			baseline: plainLast.Sub(start).Round(time.Millisecond).String() + " plain", ratio: fmt.Sprintf("%.2f", oursLast.Sub(start).Seconds()/plainLast.Sub(start).Seconds()), target: "-"},
		{what: "  a JobSet's create to its end, p50", ours: quantile(oursD, 0.5).Round(time.Millisecond).String(), baseline: quantile(plainD, 0.5).Round(time.Millisecond).String(), target: "-"},
		{what: "  a JobSet's create to its end, p99", ours: quantile(oursD, 0.99).Round(time.Millisecond).String(), baseline: quantile(plainD, 0.99).Round(time.Millisecond).String(), target: "-"},
		{what: "  JobSets Failed", ours: strconv.Itoa(oursFailed), baseline: strconv.Itoa(plainFailed), target: "0"},
		{what: "  (plain runs its 3 stages at once; ours in order, each gang-scheduled)", target: "-"},
		{what: "every JobSet deleted to nothing of them left", ours: deleted.Round(time.Millisecond).String(), target: "-"},
		{what: "CPU of the whole machine, first create to all finished", ours: usedToDone[machineCPU].Round(time.Millisecond).String(), target: "-"},
	})
	fmt.Println("PVCs: " + binderDone)

	// Memory and CPU per add-on.
	var mem []row
	for _, a := range testbed.Addons {
		mem = append(mem, row{
			what: a + ": peak RSS; RSS at " + strconv.Itoa(n/4) + " / " + strconv.Itoa(n) + " created, all finished",
			ours: mib(peak[a]), baseline: mib(rssAt[n/4][a]) + " / " + mib(rssAt[n][a]) + " / " + mib(rssDone[a]), target: "< 200 MiB at 1000",
		})
		mem = append(mem, row{what: "  Go heap allocated/next collection's goal, at the same points", baseline: heapAt[n/4][a] + ", " + heapAt[n][a] + ", " + heapDone[a] + " MiB", target: "-"})
		mem = append(mem, row{what: "  CPU used, whole run (to all finished)", ours: used[a].Round(time.Millisecond).String(), baseline: usedToDone[a].Round(time.Millisecond).String(), target: "-"})
	}
	for _, p := range []string{"kube-apiserver", "etcd", "kube-controller", "kube-scheduler", "jobset", "kwok-controller"} {
		mem = append(mem, row{what: "  CPU used by " + p + ", whole run", ours: used[p].Round(time.Millisecond).String(), target: "-"})
	}
	printTable("memory and CPU (ours: peak; baseline column: RSS at points)", mem)

	// API requests per JobSet, by add-on, verb and resource.
	min := minimumRequests(gang)
	perJobSet := map[string]map[string]int{}
	outside := map[string]map[string]int{}
	onPlain := map[string]map[string]int{}
	events := map[string]map[string]int{}
	for _, a := range audit {
		addon := addonOf(a)
		if addon == "" || a.At.After(end) || (!a.At.Before(restartFrom) && !a.At.After(restartTo)) {
			continue
		}
		into := outside
		switch {
		case a.Namespace == ours && isEvent(a):
			into = events
		case a.Namespace == ours:
			into = perJobSet
		case a.Namespace == plain:
			into = onPlain
		}
		if into[addon] == nil {
			into[addon] = map[string]int{}
		}
		into[addon][requestKey(a)]++
	}
	window := end.Sub(since)
	fmt.Printf("\n%-16s %-52s %10s %8s  %s\n", "API requests", "per JobSet with the add-ons ("+strconv.Itoa(n)+"), from the audit log", "measured", "minimum", "above the minimum: why")
	for _, addon := range testbed.Addons {
		keys := slices.Sorted(maps.Keys(perJobSet[addon]))
		for k := range min[addon] {
			if !slices.Contains(keys, k) {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		var total, minTotal float64
		for _, k := range keys {
			got := float64(perJobSet[addon][k]) / float64(n)
			want := min[addon][k]
			total += got
			minTotal += want
			why := ""
			switch {
			case got > want+0.005:
				why = whyAbove[addon+" "+k]
				if why == "" {
					why = "UNEXPLAINED"
				}
			case got < want-0.005:
				why = "below the minimum: objects missing?"
			}
			fmt.Printf("%-16s %-52s %10.2f %8.2f  %s\n", addon, k, got, want, why)
		}
		fmt.Printf("%-16s %-52s %10.2f %8.2f\n", addon, "all", total, minTotal)
	}
	fmt.Printf("\n%-16s %-52s %10s %8s\n", "API requests", "not of one JobSet: in the whole window ("+window.Round(time.Second).String()+")", "count", "per min")
	for _, addon := range testbed.Addons {
		for _, k := range slices.Sorted(maps.Keys(outside[addon])) {
			why := whyAbove[addon+" "+k]
			if why == "" && strings.HasPrefix(k, "watch ") {
				why = "an informer's watch, made again when it ends: client-go asks each for 5 to 10 minutes"
			}
			fmt.Printf("%-16s %-52s %10d %8.1f  %s\n", addon, k, outside[addon][k], float64(outside[addon][k])/window.Minutes(), why)
		}
		for _, k := range slices.Sorted(maps.Keys(onPlain[addon])) {
			fmt.Printf("%-16s %-52s %10d %8s  %s\n", addon, "on JobSets without the add-ons: "+k, onPlain[addon][k], "-", "UNEXPLAINED")
		}
	}

	// Events per JobSet.
	fmt.Printf("\n%-16s %-52s %10s\n", "Events", "per JobSet with the add-ons", "")
	for _, addon := range testbed.Addons {
		var reasons []string
		for _, r := range slices.Sorted(maps.Keys(eventReasons[addon])) {
			reasons = append(reasons, fmt.Sprintf("%s %.2f", r, float64(eventReasons[addon][r])/float64(n)))
		}
		writes := 0
		for _, v := range events[addon] {
			writes += v
		}
		fmt.Printf("%-16s %-52s %10.2f  %s\n", addon, "Event objects (occurrences: "+fmt.Sprintf("%.2f", float64(eventOccurrences[addon])/float64(n))+")",
			float64(eventObjects[addon])/float64(n), strings.Join(reasons, ", "))
		for _, k := range slices.Sorted(maps.Keys(events[addon])) {
			fmt.Printf("%-16s %-52s %10.2f\n", addon, "  requests: "+k, float64(events[addon][k])/float64(n))
		}
		_ = writes
	}

	// Every object made once, none left.
	made := map[string]map[string]int{} // resource -> name -> 201s
	conflicts := map[string]int{}
	for _, a := range audit {
		if a.Namespace != ours || a.Verb != "create" || a.DryRun || a.Subresource != "" || addonOf(a) == "" || isEvent(a) {
			continue
		}
		if made[a.Resource] == nil {
			made[a.Resource] = map[string]int{}
		}
		switch {
		case a.Code == 201:
			made[a.Resource][a.Name]++
		case a.Code == 409:
			conflicts[a.Resource]++
		}
	}
	want := map[string]map[string]bool{}
	for name := range created[ours] {
		for res, names := range mixedExpected(name, gang) {
			if want[res] == nil {
				want[res] = map[string]bool{}
			}
			for _, x := range names {
				want[res][x] = true
			}
		}
	}
	var objs []row
	for _, res := range slices.Sorted(maps.Keys(want)) {
		once, twice, missing, extra := 0, 0, 0, 0
		for name := range want[res] {
			switch made[res][name] {
			case 0:
				missing++
			case 1:
				once++
			default:
				twice++
			}
		}
		for name := range made[res] {
			if !want[res][name] {
				extra++
			}
		}
		objs = append(objs, row{what: res + ": made once / twice / never / unexpected", ours: fmt.Sprintf("%d/%d/%d/%d", once, twice, missing, extra),
			baseline: fmt.Sprintf("%d want", len(want[res])), ratio: fmt.Sprintf("%d 409s", conflicts[res]), target: "all once"})
	}
	objs = append(objs, row{what: "PVCs existing once every JobSet finished (retained)", ours: strconv.Itoa(pvcsNow), baseline: strconv.Itoa(len(want["persistentvolumeclaims"])) + " want", target: "-"})
	var leftover []string
	for _, k := range slices.Sorted(maps.Keys(left)) {
		leftover = append(leftover, fmt.Sprintf("%s %d", k, left[k]))
	}
	objs = append(objs, row{what: "left after the JobSets were deleted: " + strings.Join(leftover, ", "), target: "all 0"})
	printTable("objects", objs)
}
