package addon

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
)

func TestRefusalCause(t *testing.T) {
	a := refusalCause(`Error creating: pods "train-w-0-0-abcde" is forbidden: minimum cpu usage per Container is 100m, but request is 10m`)
	b := refusalCause(`Error creating: pods "train-w-0-0-fghij" is forbidden: minimum cpu usage per Container is 100m, but request is 10m`)
	c := refusalCause(`(combined from similar events): Error creating: pods "train-w-0-0-klmno" is forbidden: minimum cpu usage per Container is 100m, but request is 10m`)
	if a != b || a != c {
		t.Errorf("two pods refused for one cause give several causes:\n%s\n%s\n%s", a, b, c)
	}
}

// TestToldRecently: a cause is told once per JobSet, again after toldFor, and the memory never
// holds more than maxTold causes.
func TestToldRecently(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Unix(0, 0))
	var told toldRecently
	if !told.once(clk, "a", "x") || told.once(clk, "a", "x") {
		t.Fatal("a cause not told exactly once")
	}
	if !told.once(clk, "b", "x") || !told.once(clk, "a", "y") {
		t.Fatal("another JobSet's, or another cause, not told")
	}
	clk.SetTime(clk.Now().Add(toldFor))
	if !told.once(clk, "a", "x") {
		t.Error("not told again after toldFor")
	}
	for i := range 3 * maxTold {
		told.once(clk, types.UID(fmt.Sprint(i)), "x")
		if len(told.at) > maxTold {
			t.Fatalf("%d causes remembered", len(told.at))
		}
	}
}

func TestNamedIn(t *testing.T) {
	got := NamedIn(`Error creating: pods "train-w-0-0-abcde" is forbidden: claims data-train, ckpt-train-w-0-1. Not a.b-`)
	for _, want := range []string{"train-w-0-0-abcde", "data-train", "ckpt-train-w-0-1", "a.b"} {
		if !got[want] {
			t.Errorf("NamedIn misses %q: %v", want, got)
		}
	}
	if got["ckpt-train-w-0-1."] || got["data-train,"] {
		t.Errorf("NamedIn keeps punctuation: %v", got)
	}
}

// TestFromJobController: only an Event written as kube-controller-manager's Job controller
// writes a FailedCreate (a Warning on a batch/v1 Job, source and reporting component
// job-controller) is taken for one; a user's Event that says the same is not.
func TestFromJobController(t *testing.T) {
	jobController := func() *corev1.Event {
		return &corev1.Event{
			Type: corev1.EventTypeWarning, Reason: FailedCreateReason, Message: `Error creating: pods "x" is forbidden: no`,
			InvolvedObject:      corev1.ObjectReference{Kind: "Job", APIVersion: "batch/v1", Name: "train-w-0"},
			Source:              corev1.EventSource{Component: JobController},
			ReportingController: JobController,
		}
	}
	cases := map[string]struct {
		edit func(*corev1.Event)
		want bool
	}{
		"the Job controller's":         {func(*corev1.Event) {}, true},
		"no source (a user's)":         {func(e *corev1.Event) { e.Source, e.ReportingController = corev1.EventSource{}, "" }, false},
		"another source":               {func(e *corev1.Event) { e.Source.Component = "kubectl" }, false},
		"another reporting controller": {func(e *corev1.Event) { e.ReportingController = "me" }, false},
		"Normal":                       {func(e *corev1.Event) { e.Type = corev1.EventTypeNormal }, false},
		"another reason":               {func(e *corev1.Event) { e.Reason = "SuccessfulCreate" }, false},
		"about a JobSet": {func(e *corev1.Event) {
			e.InvolvedObject.Kind, e.InvolvedObject.APIVersion = "JobSet", "jobset.x-k8s.io/v1alpha2"
		}, false},
		"about a Job of another API group": {func(e *corev1.Event) { e.InvolvedObject.APIVersion = "example.com/v1" }, false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			e := jobController()
			tc.edit(e)
			if got := fromJobController(e); got != tc.want {
				t.Errorf("fromJobController = %v, want %v", got, tc.want)
			}
		})
	}
}
