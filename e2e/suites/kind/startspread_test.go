package kind_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/e2e/framework"
	"github.com/jobset-addons/jobset-addons/e2e/kindbed"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// holdInit is a user's init container that holds back the pod of rank held (job index -
// completion index, e.g. "1-1") for d at restart attempt 0 only: a slow image pull, a slow
// volume, a node that came late.
func holdInit(held string, d time.Duration) corev1.Container {
	return corev1.Container{
		Name: "hold", Image: kindbed.WorkloadImage, ImagePullPolicy: corev1.PullNever,
		Command: []string{"/bin/sh", "-c", fmt.Sprintf(`if [ "$JOB_INDEX-$JOB_COMPLETION_INDEX-$ATTEMPT" = %s-0 ]; then echo "held back %s"; sleep %d; fi`, held, d, int(d.Seconds()))},
		Env: []corev1.EnvVar{
			kindbed.FieldEnv("JOB_INDEX", "metadata.labels['"+contract.JobIndexLabelKey+"']"),
			kindbed.FieldEnv("ATTEMPT", "metadata.annotations['"+contract.RestartAttemptAnnotationKey+"']"),
		},
	}
}

// podRecord is what was last seen of one pod (by UID) while its JobSet ran: pods of a failed
// attempt are deleted by JobSet's restart, so their states are kept here.
type podRecord struct {
	name, node, attempt, rank string
	started                   time.Time // the main container's own startedAt (running or terminated)
	exitCode                  int32
	finished                  time.Time
	message                   string // the main container's termination message
	deleted                   bool   // seen with a deletionTimestamp
	containerID               string // the main container's, for its start to the nanosecond (preciseStarts)
	precise                   bool   // started is the CRI's, not the API's (seconds)
}

// recordPods polls the pods of js (framework.PollPods, every 50 ms) and keeps each pod's last
// state of its container "work"; stop returns the records, by attempt then rank.
func recordPods(ctx context.Context, c client.Client, js *jobsetv1alpha2.JobSet, podsPerJob int) (stop func() []*podRecord) {
	var mu sync.Mutex
	recs := map[types.UID]*podRecord{}
	stopPoll := framework.PollPods(ctx, c, func(ps []corev1.Pod) {
		mu.Lock()
		defer mu.Unlock()
		for i := range ps {
			p := &ps[i]
			r := recs[p.UID]
			if r == nil {
				r = &podRecord{name: p.Name, attempt: p.Annotations[contract.RestartAttemptAnnotationKey], rank: rank(p, podsPerJob), exitCode: -1}
				recs[p.UID] = r
			}
			r.node = p.Spec.NodeName
			r.deleted = r.deleted || p.DeletionTimestamp != nil
			for _, s := range p.Status.ContainerStatuses {
				if s.Name != "work" {
					continue
				}
				if s.ContainerID != "" {
					r.containerID = s.ContainerID
				}
				if s.State.Running != nil {
					r.started = s.State.Running.StartedAt.Time
				}
				if term := s.State.Terminated; term != nil {
					r.started, r.finished, r.exitCode, r.message = term.StartedAt.Time, term.FinishedAt.Time, term.ExitCode, strings.TrimSpace(term.Message)
				}
			}
		}
	}, client.InNamespace(js.Namespace), client.MatchingLabels{contract.JobSetNameLabelKey: js.Name})
	return func() []*podRecord {
		stopPoll()
		mu.Lock()
		defer mu.Unlock()
		var out []*podRecord
		for _, r := range recs {
			out = append(out, r)
		}
		sort.Slice(out, func(i, j int) bool {
			if out[i].attempt != out[j].attempt {
				return out[i].attempt < out[j].attempt
			}
			return out[i].rank < out[j].rank
		})
		return out
	}
}

// startSpread is the time from the first to the last main container start among recs of
// attempt, and how many of them started.
func startSpread(recs []*podRecord, attempt string) (time.Duration, int) {
	var first, last time.Time
	n := 0
	for _, r := range recs {
		if r.attempt != attempt || r.started.IsZero() {
			continue
		}
		if n == 0 || r.started.Before(first) {
			first = r.started
		}
		if n == 0 || r.started.After(last) {
			last = r.started
		}
		n++
	}
	return last.Sub(first), n
}

// logRecords prints every record, the start offsets from the attempt's first start.
func logRecords(t *testing.T, recs []*podRecord) {
	t.Helper()
	first := map[string]time.Time{}
	for _, r := range recs {
		if f, ok := first[r.attempt]; !r.started.IsZero() && (!ok || r.started.Before(f)) {
			first[r.attempt] = r.started
		}
	}
	for _, r := range recs {
		started := "main never started"
		if !r.started.IsZero() {
			started = fmt.Sprintf("main started at +%.3fs", r.started.Sub(first[r.attempt]).Seconds())
			if !r.precise {
				started = fmt.Sprintf("main started at +%.0fs (API, whole seconds)", r.started.Sub(first[r.attempt]).Seconds())
			}
		}
		t.Logf("attempt %s rank %s %s on %s: %s, exit %d %q", r.attempt, r.rank, r.name, r.node, started, r.exitCode, r.message)
	}
}

// TestRendezvousTimeoutRestarts is jobset #971 on real pods, without a start barrier: a JobSet
// of 2 Jobs x 2 pods of the rendezvous program with a 10 s timeout, one pod held back 20 s by an
// init container of the user's at attempt 0. The three others start together, wait 10 s for the
// fourth and fail ("timed out waiting for ranks [3]"); JobSet's failurePolicy restarts the JobSet
// (the held pod is deleted before its main container ever starts) and attempt 1, with nobody
// held, meets.
func TestRendezvousTimeoutRestarts(t *testing.T) {
	f := framework.NamespacedFeature("jobset #971", "a late pod makes the rendezvous time out and JobSet restart", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		c := framework.Client(t, cfg)
		ns := framework.NamespaceFrom(ctx)
		rj := kindbed.Rendezvous("late", "node", 2, 2, 10*time.Second)
		spec := &rj.Template.Spec.Template.Spec
		spec.InitContainers = append(spec.InitContainers, holdInit("1-1", 20*time.Second))
		js := kindbed.JobSet(ns, "late", nil, 1, rj)
		stop := recordPods(ctx, c, js, 2)
		if err := c.Create(ctx, js); err != nil {
			t.Fatal(err)
		}
		end := waitJobSetEnd(ctx, t, c, js)
		recs := stop()
		preciseStarts(ctx, t, recs)
		logRecords(t, recs)
		t.Logf("JobSet %s %s after %d restart(s)", js.Name, end, js.Status.Restarts)
		if js.Status.Restarts < 1 {
			t.Errorf("JobSet restarts = %d, want at least 1 (attempt 0 fails)", js.Status.Restarts)
		}
		timedOut := 0
		var lastFailure time.Time
		for _, r := range recs {
			switch {
			case r.attempt == "0" && r.rank == "3":
				// The held pod: its main container never started before the others gave up.
				if !r.started.IsZero() && r.started.Before(lastFailure) {
					t.Errorf("the held pod %s started its main container at %s, before the others failed", r.name, r.started)
				}
			case r.attempt == "0":
				if r.exitCode == 1 && strings.Contains(r.message, "timed out") {
					timedOut++
				}
				if r.finished.After(lastFailure) {
					lastFailure = r.finished
				}
			}
		}
		if timedOut == 0 {
			t.Errorf("no pod of attempt 0 failed with a rendezvous timeout")
		}
		s0, n0 := startSpread(recs, "0")
		s1, n1 := startSpread(recs, "1")
		t.Logf("without a barrier: attempt 0, %d of 4 main containers started within %s, %d timed out; attempt 1, %d started within %s; the JobSet %s",
			n0, s0, timedOut, n1, s1, end)
		return ctx
	})
	testenv.Test(t, f)
}

// waitJobSetEnd waits until js is Completed or Failed, leaves its latest state in js and returns
// which.
func waitJobSetEnd(ctx context.Context, t *testing.T, c client.Client, js *jobsetv1alpha2.JobSet) jobsetv1alpha2.JobSetConditionType {
	t.Helper()
	var end jobsetv1alpha2.JobSetConditionType
	framework.Eventually(ctx, t, 3*time.Minute, "JobSet "+js.Name+" Completed or Failed", func(ctx context.Context) (bool, string, error) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(js), js); err != nil {
			return false, err.Error(), nil
		}
		for _, cond := range []jobsetv1alpha2.JobSetConditionType{jobsetv1alpha2.JobSetCompleted, jobsetv1alpha2.JobSetFailed} {
			if apimeta.IsStatusConditionTrue(js.Status.Conditions, string(cond)) {
				end = cond
				return true, "", nil
			}
		}
		return false, fmt.Sprintf("restarts %d, conditions %+v", js.Status.Restarts, js.Status.Conditions), nil
	})
	return end
}

// preciseStarts replaces the API's startedAt (whole seconds) of every recorded main container
// still on its node by the CRI's own (crictl inspect on the node: nanoseconds). A pod JobSet
// deleted at a restart has no container left to ask; its start stays in seconds.
func preciseStarts(ctx context.Context, t *testing.T, recs []*podRecord) {
	t.Helper()
	for _, r := range recs {
		id, ok := strings.CutPrefix(r.containerID, "containerd://")
		if !ok || r.node == "" || r.started.IsZero() {
			continue
		}
		out, err := kb.Exec(ctx, r.node, "crictl", "inspect", "-o", "go-template", "--template", "{{.status.startedAt}}", id)
		if err != nil {
			continue // gone with its pod
		}
		at, err := time.Parse(time.RFC3339Nano, strings.TrimSpace(string(out)))
		if err != nil {
			t.Fatalf("crictl inspect %s on %s: startedAt %q: %v", id, r.node, out, err)
		}
		if at.Truncate(time.Second).Unix() != r.started.Unix() {
			t.Errorf("%s: the CRI's start %s is not the API's %s", r.name, at, r.started)
		}
		r.started, r.precise = at, true
	}
}
