package addon

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

func TestWaitsCountsKeysAndOldest(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	w := NewWaits("test_waiting", "Things waiting.", []string{"stage", "gang"}, func(context.Context) ([]Wait, error) {
		return []Wait{
			{Reason: "stage", Key: "ns/a", Since: now.Add(-30 * time.Second)},
			{Reason: "stage", Key: "ns/a", Since: now.Add(-90 * time.Second)}, // one JobSet, two pods
			{Reason: "stage", Key: "ns/b", Since: now.Add(-10 * time.Second)},
		}, nil
	})
	w.Clock = clocktesting.NewFakePassiveClock(now)
	reg := prometheus.NewPedanticRegistry()
	if err := RegisterWaits(reg, "sequencer", w); err != nil {
		t.Fatal(err)
	}
	want := `
# HELP test_waiting Things waiting.
# TYPE test_waiting gauge
test_waiting{addon="sequencer",reason="gang"} 0
test_waiting{addon="sequencer",reason="stage"} 2
# HELP test_waiting_longest_seconds Seconds the oldest of test_waiting has waited, by reason (0 when none waits).
# TYPE test_waiting_longest_seconds gauge
test_waiting_longest_seconds{addon="sequencer",reason="gang"} 0
test_waiting_longest_seconds{addon="sequencer",reason="stage"} 90
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
}

func TestWaitsReportNothingWhenListFails(t *testing.T) {
	w := NewWaits("test_failing", "Things.", []string{"stage"}, func(context.Context) ([]Wait, error) { return nil, errors.New("cache not synced") })
	if n := testutil.CollectAndCount(w); n != 0 {
		t.Errorf("a failing list reported %d series, want none", n)
	}
}

func TestCountRefusalsByFirstCause(t *testing.T) {
	invalid := apierrors.NewInvalid(schema.GroupKind{Kind: "Pod"}, "p", field.ErrorList{field.Required(field.NewPath("spec"), "x")})
	h := CountRefusals("testhook", admission.HandlerFunc(func(_ context.Context, req admission.Request) admission.Response {
		switch req.Name {
		case "invalid":
			st := invalid.Status()
			return admission.Response{AdmissionResponse: admissionv1.AdmissionResponse{Result: &st}}
		case "errored":
			return admission.Errored(400, errors.New("bad"))
		case "denied":
			return admission.Denied("no")
		}
		return admission.Allowed("")
	}))
	for _, name := range []string{"invalid", "denied", "denied", "errored", "ok"} {
		h.Handle(context.Background(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{Name: name}})
	}
	if got := testutil.ToFloat64(refusals.WithLabelValues("testhook", "Forbidden")); got != 2 {
		t.Errorf("Forbidden refusals = %v, want 2", got)
	}
	if got := testutil.ToFloat64(refusals.WithLabelValues("testhook", "error")); got != 1 {
		t.Errorf("error refusals = %v, want 1", got)
	}
	if got := testutil.ToFloat64(refusals.WithLabelValues("testhook", string(field.ErrorTypeRequired))); got != 1 {
		t.Errorf("FieldValueRequired refusals = %v, want 1", got)
	}
	countRefusal("testjobset", invalid)
	if got := testutil.ToFloat64(refusals.WithLabelValues("testjobset", string(field.ErrorTypeRequired))); got != 1 {
		t.Errorf("a validator's refusal counted %v, want 1", got)
	}
}
