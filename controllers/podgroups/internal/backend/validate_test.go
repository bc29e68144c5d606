package backend

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// TestValidate: what each backend's objects cannot hold: a coscheduling gang name that is no
// label value (the last stage's is the longest), more stages than a Workload holds templates,
// a composite gang of several stages; Volcano takes them all.
func TestValidate(t *testing.T) {
	long := strings.Repeat("n", 56) // long-stage-1 is 64 characters
	var eleven []string             // stages 0 to 10
	for i := range 11 {
		eleven = append(eleven, fmt.Sprint("r", i))
	}
	sequenced := func(scheduler string, kvs ...string) map[string]string {
		return kv(append([]string{contract.SchedulerAnnotationKey, scheduler, inOrder, "InOrder"}, kvs...)...)
	}
	composite := kv(contract.SchedulerAnnotationKey, "kubernetes", contract.CompositeAnnotationKey, "true")
	cases := map[string]struct {
		name        string
		annotations map[string]string
		rjs         []string
		wantErrs    []string
		wantIn      string
	}{
		"coscheduling: stage name longer than a label value": {name: long, annotations: sequenced("coscheduling"), rjs: []string{"a", "b"},
			wantErrs: []string{fe(field.ErrorTypeInvalid, "metadata.name")}},
		"coscheduling: stage 10's name is the longest": {name: long[1:], annotations: sequenced("coscheduling"), rjs: eleven,
			wantErrs: []string{fe(field.ErrorTypeInvalid, "metadata.name")}},
		"coscheduling: stage name of 63 characters":                 {name: long[1:], annotations: sequenced("coscheduling"), rjs: []string{"a", "b"}},
		"volcano: the long name is fine (an annotation), 11 stages": {name: long, annotations: sequenced("volcano"), rjs: eleven},
		"kubernetes: 8 stages, a Workload's most templates":         {name: "train", annotations: sequenced("kubernetes"), rjs: eleven[:8]},
		"kubernetes: 9 stages refused": {name: "train", annotations: sequenced("kubernetes"), rjs: eleven[:9],
			wantErrs: []string{fe(field.ErrorTypeInvalid, "spec.replicatedJobs")}},
		"kubernetes: a composite gang": {name: "train", annotations: composite, rjs: []string{"a", "b"}},
		"kubernetes: a composite gang sequenced": {name: "train", annotations: sequenced("kubernetes", contract.CompositeAnnotationKey, "true"), rjs: []string{"a", "b"},
			wantErrs: []string{fe(field.ErrorTypeForbidden, "metadata.annotations[podgroups.jobset-addons.io/composite]")}, wantIn: "sequenced"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			js := jobSet(tc.name, tc.annotations, tc.rjs...).Obj()
			s, gangs := read(t, js)
			errs := byScheduler[s.Scheduler].Validate(js, s, gangs)
			if diff := cmp.Diff(tc.wantErrs, fieldErrs(errs)); diff != "" {
				t.Errorf("errors (-want +got):\n%s\n%v", diff, errs)
			}
			if !strings.Contains(fmt.Sprint(errs), tc.wantIn) {
				t.Errorf("errors %v do not say %q", errs, tc.wantIn)
			}
		})
	}
}
