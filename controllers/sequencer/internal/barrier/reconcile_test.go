package barrier

import (
	"context"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/pkg/addon/addontest"
	"github.com/jobset-addons/jobset-addons/pkg/addon/checks/sequencer"
	"github.com/jobset-addons/jobset-addons/pkg/addon/jobsets"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

var barrierT0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// barrierJobSet is JobSet ns/train with a start barrier of mode JobSet (timeout 60 s) over
// ReplicatedJob w, 2 Jobs of 1 pod, as admitted, and its two Jobs.
func barrierJobSet() (*jobsetv1alpha2.JobSet, []client.Object) {
	js := addontest.JobSet("ns", "train").Annotation(contract.StartBarrierAnnotationKey, string(contract.StartBarrierJobSet)).
		Annotation(contract.StartBarrierTimeoutAnnotationKey, "60s").ReplicatedJobs(addontest.ReplicatedJob("w").Replicas(2)).Obj()
	js.UID = "js-uid"
	sequencer.InjectBarrier(js, sequencer.BarrierSettings{Image: "barrier", Resources: sequencer.DefaultBarrierResources()}, time.Minute)
	return js, []client.Object{
		addontest.Job(js, "w", 0).UID("job-0").ControlledBy(js).Obj(),
		addontest.Job(js, "w", 1).UID("job-1").ControlledBy(js).Obj(),
	}
}

// barrierPodOf is pod name of Job index (ownerJob its controller, none when ""), labelled as
// JobSet labels it with attempt, bound, its barrier container running since startedAt (not
// started when zero).
func barrierPodOf(name string, index int, ownerJob string, attempt int, startedAt time.Time) *corev1.Pod {
	p := addontest.Pod("ns", "train", "w", index, 0).Name(name).UID(name).Attempt(attempt).Label(contract.JobSetUIDLabelKey, "js-uid").Obj()
	if ownerJob != "" {
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: ownerJob, UID: types.UID(ownerJob), Controller: ptr.To(true)}}
	}
	p.Spec.NodeName = "node-0"
	p.Spec.InitContainers = []corev1.Container{{Name: contract.StartBarrierContainerName}}
	s := corev1.ContainerStatus{Name: contract.StartBarrierContainerName}
	if !startedAt.IsZero() {
		s.State.Running = &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(startedAt)}
	}
	p.Status.InitContainerStatuses = []corev1.ContainerStatus{s}
	return p
}

type barrierHarness struct {
	t     *testing.T
	c     client.Client
	clock *clocktesting.FakeClock
	rec   *events.FakeRecorder
	r     *Reconciler
	js    *jobsetv1alpha2.JobSet
}

func newBarrierHarness(t *testing.T, js *jobsetv1alpha2.JobSet, objs ...client.Object) *barrierHarness {
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = jobsetv1alpha2.AddToScheme(scheme)
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(append(objs, js)...).
		WithIndex(&batchv1.Job{}, jobsets.NameIndex, jobsets.IndexByName).WithIndex(&corev1.Pod{}, jobsets.NameIndex, jobsets.IndexByName).Build()
	h := &barrierHarness{t: t, c: c, clock: clocktesting.NewFakeClock(barrierT0), rec: events.NewFakeRecorder(100), js: js}
	h.r = &Reconciler{Client: c, Pods: c, Recorder: h.rec, Clock: h.clock, Workers: 2}
	return h
}

func (h *barrierHarness) reconcile() ctrl.Result {
	h.t.Helper()
	res, err := h.r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(h.js)})
	if err != nil {
		h.t.Fatalf("Reconcile: %v", err)
	}
	return res
}

// state is the barrier-state annotation of pod name.
func (h *barrierHarness) state(name string) string {
	h.t.Helper()
	var p corev1.Pod
	if err := h.c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: name}, &p); err != nil {
		h.t.Fatal(err)
	}
	return p.Annotations[contract.StartBarrierStateAnnotationKey]
}

// events are the Events told since the last call.
func (h *barrierHarness) events() []string {
	var out []string
	for {
		select {
		case e := <-h.rec.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

// TestBarrierTimeoutClock: the timeout counts on the controller's clock from when it first saw
// a pod waiting, whatever the node's clock says the barrier container started: a year in the
// past does not time it out at once, a year in the future does not keep it from timing out.
func TestBarrierTimeoutClock(t *testing.T) {
	for name, startedAt := range map[string]time.Time{
		"node clock a year behind": barrierT0.AddDate(-1, 0, 0),
		"node clock a year ahead":  barrierT0.AddDate(1, 0, 0),
	} {
		t.Run(name, func(t *testing.T) {
			js, jobs := barrierJobSet()
			h := newBarrierHarness(t, js, append(jobs, barrierPodOf("w-0", 0, "job-0", 0, startedAt), barrierPodOf("w-1", 1, "job-1", 0, time.Time{}))...)
			if res := h.reconcile(); res.RequeueAfter != 30*time.Second {
				t.Errorf("first look: again after %v, want 30s (half the timeout)", res.RequeueAfter)
			}
			if s := h.state("w-0"); s != "" {
				t.Fatalf("w-0 told %q at once, want nothing before the timeout", s)
			}
			h.clock.Step(59 * time.Second)
			h.reconcile()
			if s := h.state("w-0"); s != "" {
				t.Fatalf("w-0 told %q after 59 s, want nothing before the timeout", s)
			}
			h.clock.Step(time.Second)
			h.reconcile()
			if s := h.state("w-0"); !strings.HasPrefix(s, contract.StartBarrierFailedPrefix+"timed out after 1m0s") {
				t.Errorf("w-0 told %q after 60 s, want it timed out", s)
			}
		})
	}
}

// TestBarrierMembersByOwnership: bare pods labelled as the JobSet's (one of restart attempt 7,
// one of attempt 0), with a barrier container that waits, neither change the attempt nor count
// as waiting; the barrier opens when the JobSet's own two pods wait, for attempt 0, and the
// forged pods are told nothing.
func TestBarrierMembersByOwnership(t *testing.T) {
	js, jobs := barrierJobSet()
	forgedLate := barrierPodOf("forged-7", 0, "", 7, barrierT0)
	forgedNow := barrierPodOf("forged-0", 1, "", 0, barrierT0)
	// A pod whose controller is a Job that the JobSet did not make (named otherwise).
	stray := addontest.Job(js, "w", 0).Name("stray").UID("job-9").ControlledBy(js).Obj()
	strayPod := barrierPodOf("stray-pod", 1, "job-9", 0, barrierT0)
	realLate := barrierPodOf("w-1", 1, "job-1", 0, time.Time{})
	h := newBarrierHarness(t, js, append(jobs, stray, strayPod, forgedLate, forgedNow, barrierPodOf("w-0", 0, "job-0", 0, barrierT0), realLate)...)
	h.reconcile()
	for _, name := range []string{"w-0", "forged-0", "forged-7", "stray-pod"} {
		if s := h.state(name); s != "" {
			t.Errorf("%s told %q while w-1 is not at the barrier", name, s)
		}
	}
	realLate.Status.InitContainerStatuses[0].State.Running = &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(barrierT0)}
	if err := h.c.Status().Update(context.Background(), realLate); err != nil {
		t.Fatal(err)
	}
	h.reconcile()
	for name, want := range map[string]string{"w-0": "open", "w-1": "open", "forged-0": "", "forged-7": "", "stray-pod": ""} {
		if s := h.state(name); s != want {
			t.Errorf("%s told %q, want %q", name, s, want)
		}
	}
	if err := h.c.Get(context.Background(), client.ObjectKeyFromObject(js), js); err != nil {
		t.Fatal(err)
	}
	if got := js.Annotations[contract.StartBarrierOpenedAnnotationKey]; got != `{"restartAttempt":0,"run":"","groups":["jobset"]}` {
		t.Errorf("opened %s, want attempt 0", got)
	}
}

// TestBarrierStaleRecord: a record of opened barriers written before a suspend and resume that
// the controller did not see (the JobSet's Suspended condition turned False later) counts as
// none: the new pods wait for each other again. A record written by an older version (no run)
// is still read as the current run's.
func TestBarrierStaleRecord(t *testing.T) {
	for name, tc := range map[string]struct {
		record string
		want   string
	}{
		"written before the resume":   {record: `{"restartAttempt":0,"run":"","groups":["jobset"]}`, want: ""},
		"written for this run":        {record: `{"restartAttempt":0,"run":"2026-03-01T11:00:00Z","groups":["jobset"]}`, want: "open"},
		"written by an older version": {record: `{"restartAttempt":0,"groups":["jobset"]}`, want: "open"},
	} {
		t.Run(name, func(t *testing.T) {
			js, jobs := barrierJobSet()
			js.Annotations[contract.StartBarrierOpenedAnnotationKey] = tc.record
			js.Status.Conditions = []metav1.Condition{{Type: string(jobsetv1alpha2.JobSetSuspended), Status: metav1.ConditionFalse,
				Reason: "ResumeJobs", LastTransitionTime: metav1.NewTime(barrierT0.Add(-time.Hour))}}
			h := newBarrierHarness(t, js, append(jobs, barrierPodOf("w-0", 0, "job-0", 0, barrierT0), barrierPodOf("w-1", 1, "job-1", 0, time.Time{}))...)
			h.reconcile()
			if s := h.state("w-0"); s != tc.want {
				t.Errorf("w-0 told %q, want %q", s, tc.want)
			}
		})
	}
}

// TestBarrierBlocked: a pod whose barrier container waits with CreateContainerConfigError, and
// one unschedulable for UnschedulableAfter, are told in a StartBarrierBlocked Warning each,
// naming the pod, the container and the cause, once.
func TestBarrierBlocked(t *testing.T) {
	js, jobs := barrierJobSet()
	config := barrierPodOf("w-0", 0, "job-0", 0, time.Time{})
	config.Status.InitContainerStatuses[0].State.Waiting = &corev1.ContainerStateWaiting{Reason: "CreateContainerConfigError",
		Message: "container's runAsUser breaks non-root policy"}
	unplaced := barrierPodOf("w-1", 1, "job-1", 0, time.Time{})
	unplaced.Spec.NodeName = ""
	unplaced.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable",
		Message: "0/3 nodes are available: 3 Insufficient nvidia.com/gpu."}}
	h := newBarrierHarness(t, js, append(jobs, config, unplaced)...)
	if res := h.reconcile(); res.RequeueAfter != UnschedulableAfter {
		t.Errorf("again after %v, want %v", res.RequeueAfter, UnschedulableAfter)
	}
	got := h.events()
	if len(got) != 1 || !strings.Contains(got[0], "Warning StartBarrierBlocked Start barrier jobset (restart attempt 0) cannot open: pod w-0 init container "+
		contract.StartBarrierContainerName+" waits: CreateContainerConfigError: container's runAsUser breaks non-root policy") {
		t.Errorf("events %q, want one StartBarrierBlocked naming w-0 and its cause", got)
	}
	h.clock.Step(UnschedulableAfter)
	h.reconcile()
	got = h.events()
	if len(got) != 1 || !strings.Contains(got[0], "cannot open: pod w-1 cannot be scheduled: 0/3 nodes are available") {
		t.Errorf("events %q, want one StartBarrierBlocked naming w-1 unschedulable", got)
	}
	h.reconcile()
	if got := h.events(); len(got) != 0 {
		t.Errorf("told again: %q", got)
	}
}

// TestTrimBarrierPod: the cache keeps the controller reference, the init containers' waiting
// reasons up to the barrier (messages cut short) and the Unschedulable condition, nothing else.
func TestTrimBarrierPod(t *testing.T) {
	p := barrierPodOf("w-0", 0, "job-0", 0, time.Time{})
	p.OwnerReferences = append(p.OwnerReferences, metav1.OwnerReference{Kind: "Other", Name: "x"})
	p.Spec.InitContainers = append([]corev1.Container{{Name: "download"}}, p.Spec.InitContainers...)
	p.Status.InitContainerStatuses = []corev1.ContainerStatus{
		{Name: "download", Image: "x", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: strings.Repeat("m", 1000)}}},
		{Name: contract.StartBarrierContainerName, Image: "y"},
		{Name: "after", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "PodInitializing"}}},
	}
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse}}
	trimBarrierPod(p)
	if len(p.OwnerReferences) != 1 || p.OwnerReferences[0].UID != "job-0" {
		t.Errorf("owner references %+v, want the controller only", p.OwnerReferences)
	}
	s := p.Status.InitContainerStatuses
	if len(s) != 2 || s[0].State.Waiting == nil || s[0].State.Waiting.Reason != "ImagePullBackOff" || len(s[0].State.Waiting.Message) > maxCachedMessage+4 || s[0].Image != "" {
		t.Errorf("init statuses %+v, want download's waiting reason (message cut) and the barrier's", s)
	}
	if len(p.Status.Conditions) != 0 {
		t.Errorf("conditions %+v, want none (not unschedulable)", p.Status.Conditions)
	}
}

// TestBarrierNodeDown: a pod whose barrier container still shows running, on a node that is
// unreachable or deleted, does not count as waiting: the barrier stays closed while the other
// pod waits, a StartBarrierBlocked Warning names the pod and its node, and once the node is
// Ready again the barrier opens.
func TestBarrierNodeDown(t *testing.T) {
	unreachable := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-0"},
		Spec:   corev1.NodeSpec{Taints: []corev1.Taint{{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoExecute}}},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionUnknown}}}}
	ready := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}}
	for name, tc := range map[string]struct {
		nodes []client.Object
		want  string
	}{
		"unreachable": {[]client.Object{unreachable.DeepCopy(), ready.DeepCopy()}, "node node-0 is NotReady or unreachable"},
		"deleted":     {[]client.Object{ready.DeepCopy()}, "node node-0 is deleted"},
	} {
		t.Run(name, func(t *testing.T) {
			js, jobs := barrierJobSet()
			stale := barrierPodOf("w-0", 0, "job-0", 0, barrierT0)
			waiting := barrierPodOf("w-1", 1, "job-1", 0, barrierT0)
			waiting.Spec.NodeName = "node-1"
			h := newBarrierHarness(t, js, append(append(jobs, stale, waiting), tc.nodes...)...)
			h.r.Nodes = h.c
			h.reconcile()
			for _, p := range []string{"w-0", "w-1"} {
				if s := h.state(p); s != "" {
					t.Errorf("%s told %q while w-0's node is down", p, s)
				}
			}
			got := h.events()
			if len(got) != 1 || !strings.Contains(got[0], "Warning StartBarrierBlocked Start barrier jobset (restart attempt 0) cannot open: pod w-0 is on a node that cannot be trusted") ||
				!strings.Contains(got[0], tc.want) {
				t.Errorf("events %q, want one StartBarrierBlocked naming w-0 and %q", got, tc.want)
			}
			if err := h.c.Delete(context.Background(), ready.DeepCopy()); err != nil {
				t.Fatal(err)
			}
			n := ready.DeepCopy()
			n.Name = "node-0"
			if err := h.c.Delete(context.Background(), n); client.IgnoreNotFound(err) != nil {
				t.Fatal(err)
			}
			for _, name := range []string{"node-0", "node-1"} {
				n := ready.DeepCopy()
				n.Name, n.ResourceVersion = name, ""
				if err := h.c.Create(context.Background(), n); err != nil {
					t.Fatal(err)
				}
			}
			h.reconcile()
			for _, p := range []string{"w-0", "w-1"} {
				if s := h.state(p); s != "open" {
					t.Errorf("%s told %q once the node is Ready, want open", p, s)
				}
			}
		})
	}
}
