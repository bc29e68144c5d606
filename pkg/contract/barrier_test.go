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
	if StartBarrierGroup(StartBarrierJobSet, 3) != "jobset" || StartBarrierGroup(StartBarrierStage, 1) != "stage-1" {
		t.Error("StartBarrierGroup")
	}
}
