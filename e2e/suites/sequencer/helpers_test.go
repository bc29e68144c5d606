package sequencer_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/e2e/framework"
	"github.com/jobset-addons/jobset-addons/pkg/addon/addontest"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// replicated is a ReplicatedJob of replicas Jobs, each of pods pods (all at once, no retries)
// that run for run (kwok's delay).
func replicated(name string, replicas, pods int32, run string) *addontest.ReplicatedJobWrapper {
	return addontest.ReplicatedJob(name).Replicas(replicas).Pods(pods).CompletionMode(nil).
		PodAnnotation(framework.DelayAnnotationKey, run)
}

// runFor sets the run time of the pods of every ReplicatedJob named.
func runFor(js *jobsetv1alpha2.JobSet, run string, names ...string) {
	for i := range js.Spec.ReplicatedJobs {
		rj := &js.Spec.ReplicatedJobs[i]
		if slices.Contains(names, rj.Name) {
			if rj.Template.Spec.Template.Annotations == nil {
				rj.Template.Spec.Template.Annotations = map[string]string{}
			}
			rj.Template.Spec.Template.Annotations[framework.DelayAnnotationKey] = run
		}
	}
}

func hasGate(gates []corev1.PodSchedulingGate) bool {
	return slices.ContainsFunc(gates, func(g corev1.PodSchedulingGate) bool { return g.Name == contract.SequencerSchedulingGateValue })
}

// dep is one predecessor a ReplicatedJob waits for.
type dep struct {
	name   string
	status contract.DependencyStatus
}

// sequence is what a test expects of a JobSet: the pods of each ReplicatedJob in one attempt,
// and what each waiting ReplicatedJob waits for.
type sequence struct {
	pods map[string]int
	deps map[string][]dep
}

func attemptOf(p *corev1.Pod) int {
	n, err := strconv.Atoi(p.Labels[contract.RestartAttemptLabelKey])
	if err != nil {
		return -1
	}
	return n
}

func schedulingGated(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Reason == corev1.PodReasonSchedulingGated {
			return true
		}
	}
	return false
}

// check looks at one consistent list of the JobSet's pods: in its latest attempt, a pod of a
// waiting ReplicatedJob may be bound to a node only if every predecessor holds (Complete: all its
// pods Succeeded; Ready: all its pods ready or Succeeded). succeeded holds the pods seen
// Succeeded in earlier lists: a restart deletes the pods of the old attempt in no set order, and
// a predecessor pod that Succeeded and is gone still counts.
func (s sequence) check(pods []corev1.Pod, succeeded map[types.UID]succeededPod) []string {
	attempt := -1
	for i := range pods {
		attempt = max(attempt, attemptOf(&pods[i]))
	}
	count := func(rj string, ok func(*corev1.Pod) bool, live bool) int {
		n := 0
		listed := map[types.UID]bool{}
		for i := range pods {
			p := &pods[i]
			listed[p.UID] = true
			if attemptOf(p) == attempt && (!live || p.DeletionTimestamp == nil) && p.Labels[contract.ReplicatedJobNameLabelKey] == rj && ok(p) {
				n++
			}
		}
		if !live {
			for uid, sp := range succeeded {
				if !listed[uid] && sp.attempt == attempt && sp.replicatedJob == rj {
					n++
				}
			}
		}
		return n
	}
	var bad []string
	for rj, deps := range s.deps {
		bound := count(rj, func(p *corev1.Pod) bool { return p.Spec.NodeName != "" }, true)
		if bound == 0 {
			continue
		}
		for _, d := range deps {
			held := count(d.name, func(p *corev1.Pod) bool {
				return p.Status.Phase == corev1.PodSucceeded || (d.status == contract.DependencyReady && p.DeletionTimestamp == nil && framework.PodReady(p))
			}, false)
			if held < s.pods[d.name] {
				bad = append(bad, fmt.Sprintf("attempt %d: %d pods of %s bound while %d of %d pods of %s are %s", attempt, bound, rj, held, s.pods[d.name], d.name, d.status))
			}
		}
	}
	return bad
}

// succeededPod is a pod seen Succeeded.
type succeededPod struct {
	replicatedJob string
	attempt       int
}

// watch polls the JobSet's pods every 50ms while a test runs, checks each list against the
// sequence and records what it saw.
type watch struct {
	podPoll
	// gated: "<replicatedJob>/<attempt>" seen SchedulingGated by the scheduler.
	gated map[string]bool
	// firstSeen and firstBound: when a pod (by UID) was first seen, and first seen bound.
	firstSeen, firstBound map[string]time.Time
	podRJ                 map[string]string
	// succeeded: every pod seen Succeeded.
	succeeded map[types.UID]succeededPod
}

func startWatch(ctx context.Context, t *testing.T, c client.Client, js *jobsetv1alpha2.JobSet, s sequence) *watch {
	t.Helper()
	w := &watch{podPoll: podPoll{broken: "released early"}, gated: map[string]bool{},
		firstSeen: map[string]time.Time{}, firstBound: map[string]time.Time{}, podRJ: map[string]string{},
		succeeded: map[types.UID]succeededPod{}}
	w.stop = framework.PollPods(ctx, c, func(pods []corev1.Pod) {
		now := time.Now()
		w.mu.Lock()
		defer w.mu.Unlock()
		bad := s.check(pods, w.succeeded)
		w.violations = append(w.violations, bad...)
		for i := range pods {
			p := &pods[i]
			uid := string(p.UID)
			w.podRJ[uid] = p.Labels[contract.ReplicatedJobNameLabelKey]
			if _, ok := w.firstSeen[uid]; !ok {
				w.firstSeen[uid] = now
			}
			if p.Status.Phase == corev1.PodSucceeded {
				w.succeeded[p.UID] = succeededPod{replicatedJob: p.Labels[contract.ReplicatedJobNameLabelKey], attempt: attemptOf(p)}
			}
			if _, ok := w.firstBound[uid]; !ok && p.Spec.NodeName != "" {
				w.firstBound[uid] = now
			}
			if schedulingGated(p) && hasGate(p.Spec.SchedulingGates) {
				w.gated[fmt.Sprintf("%s/%d", p.Labels[contract.ReplicatedJobNameLabelKey], attemptOf(p))] = true
			}
		}
	}, client.InNamespace(js.Namespace), client.MatchingLabels{contract.JobSetNameLabelKey: js.Name})
	return w
}

// podPoll is what the suite's pod watches share: the poll to stop, and the promises broken.
type podPoll struct {
	stop func()
	// broken says what a violation is ("released early").
	broken string

	mu         sync.Mutex
	violations []string
}

// finish stops the poll and fails the test on any violation seen.
func (w *podPoll) finish(t *testing.T) {
	t.Helper()
	w.stop()
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.violations) > 0 {
		t.Errorf("%s, %d times; first: %s", w.broken, len(w.violations), w.violations[0])
	}
}

// complete waits for the JobSet to complete, stops the watch, fails the test on any early
// release, and checks that the pods of each "<replicatedJob>/<attempt>" of gated were seen
// SchedulingGated.
func (w *watch) complete(ctx context.Context, t *testing.T, c client.Client, js *jobsetv1alpha2.JobSet, gated ...string) {
	t.Helper()
	waitFinished(ctx, t, c, js)
	w.finish(t)
	for _, g := range gated {
		rj, attempt, _ := strings.Cut(g, "/")
		n, _ := strconv.Atoi(attempt)
		if !w.sawGated(rj, n) {
			t.Errorf("the pods of %s in attempt %d were never seen SchedulingGated", rj, n)
		}
	}
}

// sawGated tells whether pods of the ReplicatedJob in the attempt were seen SchedulingGated.
func (w *watch) sawGated(rj string, attempt int) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.gated[fmt.Sprintf("%s/%d", rj, attempt)]
}

// slowestBinding is, among the pods of the ReplicatedJob first seen after since, the longest
// time from first seen to first seen bound.
func (w *watch) slowestBinding(rj string, since time.Time) (time.Duration, int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var slowest time.Duration
	n := 0
	for uid, seen := range w.firstSeen {
		if w.podRJ[uid] != rj || seen.Before(since) {
			continue
		}
		bound, ok := w.firstBound[uid]
		if !ok {
			continue
		}
		n++
		slowest = max(slowest, bound.Sub(seen))
	}
	return slowest, n
}

// waitFinished waits for the JobSet to complete, and fails the test if it fails.
func waitFinished(ctx context.Context, t *testing.T, c client.Client, js *jobsetv1alpha2.JobSet) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for time.Now().Before(deadline) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(js), js); err != nil {
			t.Fatal(err)
		}
		if apimeta.IsStatusConditionTrue(js.Status.Conditions, string(jobsetv1alpha2.JobSetCompleted)) {
			return
		}
		if apimeta.IsStatusConditionTrue(js.Status.Conditions, string(jobsetv1alpha2.JobSetFailed)) {
			t.Fatalf("JobSet %s failed: %+v", js.Name, js.Status.Conditions)
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("JobSet %s did not complete: %+v", js.Name, js.Status.Conditions)
}

// released is the JobSet's released annotation.
func released(t *testing.T, js *jobsetv1alpha2.JobSet) contract.Released {
	t.Helper()
	value, ok := js.Annotations[contract.ReleasedAnnotationKey]
	if !ok {
		return contract.Released{RestartAttempt: -1}
	}
	r, errs := contract.ParseReleased(value, contract.JobSetAnnotationPath(contract.ReleasedAnnotationKey))
	if len(errs) > 0 {
		t.Fatalf("released annotation %q: %v", value, errs.ToAggregate())
	}
	return r
}

// stageReleasedEvents are the messages of the JobSet's StageReleased events.
func stageReleasedEvents(ctx context.Context, t *testing.T, c client.Client, js *jobsetv1alpha2.JobSet) []string {
	t.Helper()
	var list corev1.EventList
	if err := c.List(ctx, &list, client.InNamespace(js.Namespace)); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range list.Items {
		if e.InvolvedObject.UID == js.UID && e.Reason == "StageReleased" {
			out = append(out, e.Message)
		}
	}
	slices.Sort(out)
	return out
}

// expectEvents checks that there is exactly one StageReleased event per entry of want, each
// message containing the entry.
func expectEvents(ctx context.Context, t *testing.T, c client.Client, js *jobsetv1alpha2.JobSet, want ...string) {
	t.Helper()
	var got []string
	deadline := time.Now().Add(10 * time.Second)
	for {
		got = stageReleasedEvents(ctx, t, c, js)
		if len(got) >= len(want) || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if len(got) != len(want) {
		t.Errorf("StageReleased events %q, want %d", got, len(want))
		return
	}
	for _, w := range want {
		if !slices.ContainsFunc(got, func(m string) bool { return strings.Contains(m, w) }) {
			t.Errorf("StageReleased events %q: none says %q", got, w)
		}
	}
}

// sequencerKiller kills the testbed's sequencer (SIGKILL) and starts it again.
type sequencerKiller struct {
	ctx     context.Context
	c       client.Client
	tb      framework.Config
	killed  string // the holder of the Lease when it was killed
	running bool
}

func newSequencerKiller(ctx context.Context, t *testing.T, c client.Client) *sequencerKiller {
	t.Helper()
	tb, err := framework.DefaultConfig()
	if err != nil {
		t.Fatal(err)
	}
	return &sequencerKiller{ctx: ctx, c: c, tb: tb, running: true}
}

func (k *sequencerKiller) leader(t *testing.T) string {
	t.Helper()
	var lease coordinationv1.Lease
	if err := k.c.Get(k.ctx, client.ObjectKey{Namespace: framework.AddonNamespace, Name: "sequencer.jobset-addons.io"}, &lease); err != nil {
		t.Fatalf("the sequencer's lease: %v", err)
	}
	return ptr.Deref(lease.Spec.HolderIdentity, "")
}

// stop kills the sequencer.
func (k *sequencerKiller) stop(t *testing.T) {
	t.Helper()
	k.killed = k.leader(t)
	if err := framework.KillAddon(k.tb, addonName); err != nil {
		t.Fatalf("killing the sequencer: %v", err)
	}
	k.running = false
}

// start starts the sequencer again and waits until it leads.
func (k *sequencerKiller) start(t *testing.T) {
	t.Helper()
	if err := framework.StartAddon(k.ctx, k.tb, addonName, func(ctx context.Context) error { return probe(ctx, k.c) }, addonArgs...); err != nil {
		t.Fatalf("starting the sequencer: %v", err)
	}
	k.running = true
	framework.Eventually(k.ctx, t, 30*time.Second, "the new sequencer leads", func(context.Context) (bool, string, error) {
		h := k.leader(t)
		return h != "" && h != k.killed, h, nil
	})
}

// restore starts the sequencer if a test left it stopped, for the next tests.
func (k *sequencerKiller) restore(t *testing.T) {
	if !k.running {
		k.start(t)
	}
}
