package contract

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestParseStartBarrier(t *testing.T) {
	p := JobSetAnnotationPath(StartBarrierAnnotationKey)
	for value, want := range map[string]StartBarrier{"JobSet": StartBarrierJobSet, "Stage": StartBarrierStage} {
		got, errs := ParseStartBarrier(value, p)
		if len(errs) > 0 || got != want {
			t.Errorf("ParseStartBarrier(%q) = %q, %v; want %q", value, got, errs, want)
		}
	}
	for _, value := range []string{"", "jobset", "Pod"} {
		if _, errs := ParseStartBarrier(value, p); len(errs) != 1 || errs[0].Field != p.String() {
			t.Errorf("ParseStartBarrier(%q) errors = %v, want one at %s", value, errs, p)
		}
	}
}

func TestParseStartBarrierTimeout(t *testing.T) {
	p := JobSetAnnotationPath(StartBarrierTimeoutAnnotationKey)
	cases := map[string]struct {
		want    time.Duration
		wantErr bool
	}{
		"90s":   {want: 90 * time.Second},
		"15m":   {want: 15 * time.Minute},
		"1s":    {want: time.Second},
		"0s":    {wantErr: true},
		"-1m":   {wantErr: true},
		"10":    {wantErr: true},
		"500ms": {wantErr: true},
		"169h":  {wantErr: true},
		"":      {wantErr: true},
	}
	for value, tc := range cases {
		got, errs := ParseStartBarrierTimeout(value, p)
		if tc.wantErr {
			if len(errs) != 1 || errs[0].Type != field.ErrorTypeInvalid || errs[0].Field != p.String() {
				t.Errorf("%q: errors %v, want one Invalid at %s", value, errs, p)
			}
			continue
		}
		if len(errs) > 0 || got != tc.want {
			t.Errorf("%q: got %v, %v; want %v", value, got, errs, tc.want)
		}
	}
}

func TestBarriersOpened(t *testing.T) {
	p := JobSetAnnotationPath(StartBarrierOpenedAnnotationKey)
	b := BarriersOpened{RestartAttempt: 2}.With("stage-0").With("stage-1").With("stage-0")
	if got, want := b.String(), `{"restartAttempt":2,"groups":["stage-0","stage-1"]}`; got != want {
		t.Errorf("String() = %s, want %s", got, want)
	}
	back, errs := ParseBarriersOpened(b.String(), p)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if diff := cmp.Diff(b, back); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	if got := (BarriersOpened{}).String(); got != `{"restartAttempt":0,"groups":[]}` {
		t.Errorf("empty String() = %s", got)
	}
	for _, bad := range []string{``, `{"restartAttempt":-1,"groups":[]}`, `{"restartAttempt":0,"groups":["a","a"]}`, `{"restartAttempt":0,"groups":[""]}`, `{"attempt":0}`, `null`} {
		if _, errs := ParseBarriersOpened(bad, p); len(errs) == 0 {
			t.Errorf("ParseBarriersOpened(%q) accepted", bad)
		}
	}
	// A record of a run, and one written before runs were recorded (for any run of its attempt).
	run := "2025-01-02T03:04:05Z"
	withRun := BarriersOpened{RestartAttempt: 1, Run: &run}.With("jobset")
	if got, want := withRun.String(), `{"restartAttempt":1,"run":"2025-01-02T03:04:05Z","groups":["jobset"]}`; got != want {
		t.Errorf("String() = %s, want %s", got, want)
	}
	back, errs = ParseBarriersOpened(withRun.String(), p)
	if len(errs) > 0 || back.Run == nil || *back.Run != run {
		t.Errorf("round trip of a run: %+v, %v", back, errs)
	}
	resumingRun := StartBarrierRun(true, true, time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC))
	resuming := BarriersOpened{RestartAttempt: 1, Run: &resumingRun}
	if resumingRun != "resuming 2025-01-02T03:04:05Z" || StartBarrierRun(false, false, time.Time{}) != "" ||
		StartBarrierRun(true, false, time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)) != run {
		t.Errorf("StartBarrierRun: %q", resumingRun)
	}
	old, errs := ParseBarriersOpened(`{"restartAttempt":1,"groups":["jobset"]}`, p)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	for _, tc := range []struct {
		b       BarriersOpened
		attempt int32
		run     string
		want    bool
	}{
		{withRun, 1, run, true},
		{withRun, 1, "", false},
		{withRun, 1, "2025-01-02T03:09:00Z", false},
		{withRun, 2, run, false},
		{old, 1, "2025-01-02T03:09:00Z", true},
		{resuming, 1, "2025-01-02T03:09:00Z", true},  // the resume under way, done
		{resuming, 1, "2025-01-02T03:00:00Z", false}, // a resume before that suspension
		{resuming, 1, "resuming 2025-01-02T03:09:00Z", false},
		{resuming, 1, "resuming 2025-01-02T03:04:05Z", true},
		{old, 0, "", false},
	} {
		if got := tc.b.For(tc.attempt, tc.run); got != tc.want {
			t.Errorf("%s.For(%d, %q) = %t, want %t", tc.b, tc.attempt, tc.run, got, tc.want)
		}
	}
	if StartBarrierGroup(StartBarrierJobSet, 3) != "jobset" || StartBarrierGroup(StartBarrierStage, 1) != "stage-1" {
		t.Error("StartBarrierGroup")
	}
}
