package kind_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
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

// holdInit is a user's init container that holds back, at restart attempt 0 only, each pod of
// holds (<rjob>-<job index>-<completion index>, e.g. "node-1-1") for its duration: a slow image
// pull, a slow volume, a node that came late.
func holdInit(holds map[string]time.Duration) corev1.Container {
	script := `case "$RJOB-$JOB_INDEX-$JOB_COMPLETION_INDEX-$ATTEMPT" in`
	for who, d := range holds {
		script += fmt.Sprintf(` %s-0) echo "held back %s"; sleep %d;;`, who, d, int(d.Seconds()))
	}
	return corev1.Container{
		Name: "hold", Image: kindbed.WorkloadImage, ImagePullPolicy: corev1.PullNever,
		Command: []string{"/bin/sh", "-c", script + " esac"},
		Env: []corev1.EnvVar{
			kindbed.FieldEnv("RJOB", "metadata.labels['"+contract.ReplicatedJobNameLabelKey+"']"),
			kindbed.FieldEnv("JOB_INDEX", "metadata.labels['"+contract.JobIndexLabelKey+"']"),
			kindbed.FieldEnv("ATTEMPT", "metadata.annotations['"+contract.RestartAttemptAnnotationKey+"']"),
		},
	}
}

// podRecord is what was last seen of one pod (by UID) while its JobSet ran: pods of a failed
// attempt are deleted by JobSet's restart, so their states are kept here.
type podRecord struct {
	name, node, attempt, rank string
	uid                       types.UID
	started                   time.Time // the main container's own startedAt (running or terminated)
	exitCode                  int32
	finished                  time.Time
	message                   string // the main container's termination message
	deleted                   bool   // seen with a deletionTimestamp
	containerID               string // the main container's, for its start to the nanosecond (preciseStarts)
	precise                   bool   // started is the CRI's, not the API's (seconds)
	rjob                      string
	// The start barrier's init container: when it started (the pod reached the barrier), ended,
	// how, and when this poll first saw the pod's barrier-state annotation "open" (the
	// controller's patch, seen at most one poll later).
	barrierID                    string
	barrierStarted, barrierEnded time.Time
	barrierExit                  int32
	barrierMessage               string
	openSeen                     time.Time
	// nudgeSeen: when this poll first saw the controller tell the pod again (the barrier-nudge
	// annotation: the pod still waited seconds after it was told).
	nudgeSeen time.Time
}

// recordPods polls the pods of js (framework.PollPods, every 50 ms) and keeps each pod's last
// state of its main container (the first; "work" in the suite's own workloads); stop returns the records, by attempt then rank.
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
				r = &podRecord{name: p.Name, uid: p.UID, attempt: p.Annotations[contract.RestartAttemptAnnotationKey], rank: rank(p, podsPerJob), exitCode: -1,
					rjob: p.Labels[contract.ReplicatedJobNameLabelKey], barrierExit: -1}
				recs[p.UID] = r
			}
			if r.openSeen.IsZero() && p.Annotations[contract.StartBarrierStateAnnotationKey] == contract.StartBarrierOpen {
				r.openSeen = time.Now()
			}
			if r.nudgeSeen.IsZero() && p.Annotations[contract.StartBarrierNudgeAnnotationKey] != "" {
				r.nudgeSeen = time.Now()
			}
			for _, s := range p.Status.InitContainerStatuses {
				if s.Name != contract.StartBarrierContainerName {
					continue
				}
				if s.ContainerID != "" {
					r.barrierID = s.ContainerID
				}
				if s.State.Running != nil {
					r.barrierStarted = s.State.Running.StartedAt.Time
				}
				if term := s.State.Terminated; term != nil {
					r.barrierStarted, r.barrierEnded, r.barrierExit, r.barrierMessage = term.StartedAt.Time, term.FinishedAt.Time, term.ExitCode, strings.TrimSpace(term.Message)
				}
			}
			r.node = p.Spec.NodeName
			r.deleted = r.deleted || p.DeletionTimestamp != nil
			for _, s := range p.Status.ContainerStatuses {
				if s.Name != p.Spec.Containers[0].Name {
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
			if out[i].rjob != out[j].rjob {
				return out[i].rjob < out[j].rjob
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
	first := map[string]time.Time{} // per attempt, the first barrier arrival or main start
	for _, r := range recs {
		for _, at := range []time.Time{r.started, r.barrierStarted} {
			if f, ok := first[r.attempt]; !at.IsZero() && (!ok || at.Before(f)) {
				first[r.attempt] = at
			}
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
		barrier := ""
		if !r.barrierStarted.IsZero() {
			open := "never seen open"
			if !r.openSeen.IsZero() {
				open = fmt.Sprintf("seen open at +%.3fs", r.openSeen.Sub(first[r.attempt]).Seconds())
			}
			if !r.nudgeSeen.IsZero() {
				open += fmt.Sprintf(", told again at +%.3fs", r.nudgeSeen.Sub(first[r.attempt]).Seconds())
			}
			barrier = fmt.Sprintf("; barrier reached at +%.3fs, %s, left at +%.3fs exit %d %q", r.barrierStarted.Sub(first[r.attempt]).Seconds(), open, r.barrierEnded.Sub(first[r.attempt]).Seconds(), r.barrierExit, r.barrierMessage)
		}
		t.Logf("attempt %s %s rank %s %s on %s: %s, exit %d %q%s", r.attempt, r.rjob, r.rank, r.name, r.node, started, r.exitCode, r.message, barrier)
	}
}

// TestRendezvousTimeoutRestarts is jobset #971 on real pods, without a start barrier: a JobSet
// of 2 Jobs x 2 pods of the rendezvous program with a 10 s timeout, one pod held back 20 s by an
// init container of the user's at attempt 0. The three others start together, wait 10 s for the
// fourth and fail ("timed out waiting for ranks [3]"); JobSet's failurePolicy restarts the JobSet,
// the held pod deleted before its main container ever started. Attempt 1, nobody held, may
// still fail: its ranks can find rank 0's name cached by CoreDNS with attempt 0's address (30 s),
// or "no such host" cached for 30 s when they looked before rank 0's IP was published; the test
// reports what happened and asserts only attempt 0's story.
func TestRendezvousTimeoutRestarts(t *testing.T) {
	f := framework.NamespacedFeature("jobset #971", "a late pod makes the rendezvous time out and JobSet restart", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		c := framework.Client(t, cfg)
		ns := framework.NamespaceFrom(ctx)
		rj := kindbed.Rendezvous("late", "node", 2, 2, 10*time.Second)
		spec := &rj.Template.Spec.Template.Spec
		spec.InitContainers = append(spec.InitContainers, holdInit(map[string]time.Duration{"node-1-1": 20 * time.Second}))
		js := kindbed.JobSet(ns, "late", nil, 1, rj)
		end, recs := runRecorded(ctx, t, c, js, 2)
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
		if r.node == "" {
			continue
		}
		if at, ok := criTime(ctx, t, r.node, r.containerID, "startedAt", r.started); ok {
			r.started, r.precise = at, true
		}
		if at, ok := criTime(ctx, t, r.node, r.barrierID, "startedAt", r.barrierStarted); ok {
			r.barrierStarted = at
		}
		if at, ok := criTime(ctx, t, r.node, r.barrierID, "finishedAt", r.barrierEnded); ok {
			r.barrierEnded = at
		}
	}
}

// criTime is the CRI's time field (startedAt, finishedAt) of container id on node, to the
// nanosecond, when the container is still there; api is the same time as the API has it
// (seconds), which it must match.
func criTime(ctx context.Context, t *testing.T, node, containerID, field string, api time.Time) (time.Time, bool) {
	t.Helper()
	id, ok := strings.CutPrefix(containerID, "containerd://")
	if !ok || api.IsZero() {
		return time.Time{}, false
	}
	out, err := kb.Exec(ctx, node, "crictl", "inspect", "-o", "go-template", "--template", "{{.status."+field+"}}", id)
	if err != nil {
		return time.Time{}, false // gone with its pod
	}
	at, err := time.Parse(time.RFC3339Nano, strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatalf("crictl inspect %s on %s: %s %q: %v", id, node, field, out, err)
	}
	if at.Unix() != api.Unix() {
		t.Errorf("container %s on %s: the CRI's %s %s is not the API's %s", id, node, field, at, api)
	}
	return at, true
}

// runRecorded creates js, records its pods (recordPods) until it is Completed or Failed, takes
// the containers' starts from the CRI (preciseStarts) and logs them: the JobSet's end and the
// records.
func runRecorded(ctx context.Context, t *testing.T, c client.Client, js *jobsetv1alpha2.JobSet, podsPerJob int) (jobsetv1alpha2.JobSetConditionType, []*podRecord) {
	t.Helper()
	stop := recordPods(ctx, c, js, podsPerJob)
	if err := c.Create(ctx, js); err != nil {
		stop()
		t.Fatal(err)
	}
	end := waitJobSetEnd(ctx, t, c, js)
	recs := stop()
	preciseStarts(ctx, t, recs)
	logRecords(t, recs)
	saveKubeletLogs(ctx, t, recs)
	return end, recs
}

// saveKubeletLogs writes, for each pod the sequencer told again (still at its barrier seconds
// after told open), what its node's kubelet logged about it (lines naming it or its UID) into the kind work directory
// (bin/kind/kubelet-<pod>.log), to read what the kubelet did with the pod's update: with
// KIND_KUBELET_VERBOSITY=4 that includes its volume manager's remounts.
func saveKubeletLogs(ctx context.Context, t *testing.T, recs []*podRecord) {
	t.Helper()
	for _, r := range recs {
		if r.nudgeSeen.IsZero() || r.node == "" {
			continue
		}
		out, err := kb.Exec(ctx, r.node, "journalctl", "-u", "kubelet", "--no-pager", "-o", "short-precise", "--since", "-10min")
		if err != nil {
			t.Logf("%s was told again; its kubelet's log: %v", r.name, err)
			continue
		}
		var lines []string
		for _, l := range strings.Split(string(out), "\n") {
			if strings.Contains(l, r.name) || strings.Contains(l, string(r.uid)) {
				lines = append(lines, l)
			}
		}
		path := filepath.Join(kb.WorkDir, "kubelet-"+r.name+".log")
		if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			t.Logf("%s was told again; writing its kubelet's log: %v", r.name, err)
			continue
		}
		t.Logf("%s was told again: %d lines of %s's kubelet log about it in %s", r.name, len(lines), r.node, path)
	}
}
