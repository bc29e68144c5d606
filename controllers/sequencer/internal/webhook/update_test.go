package webhook

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/pkg/addon/addontest"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

func TestValidateUpdateBarrierState(t *testing.T) {
	const path = "spec.replicatedJobs[1].template.spec.template.metadata.annotations[sequencer.jobset-addons.io/barrier-state]"
	base := func() *jobsetv1alpha2.JobSet {
		return addontest.JobSet("ns", "js").Annotations(map[string]string{contract.StartBarrierAnnotationKey: string(contract.StartBarrierJobSet)}).
			ReplicatedJobs(addontest.ReplicatedJob("a"), addontest.ReplicatedJob("b")).Obj()
	}
	withState := func(value string) *jobsetv1alpha2.JobSet {
		js := base()
		js.Spec.ReplicatedJobs[1].Template.Spec.Template.Annotations = map[string]string{contract.StartBarrierStateAnnotationKey: value}
		return js
	}
	for _, tc := range []struct {
		name     string
		old, new *jobsetv1alpha2.JobSet
		want     []string
	}{
		{name: "added", old: base(), new: withState(contract.StartBarrierOpen), want: []string{path}},
		{name: "changed", old: withState("x"), new: withState(contract.StartBarrierOpen), want: []string{path}},
		{name: "removed", old: withState("x"), new: base(), want: []string{path}},
		{name: "unchanged", old: base(), new: base()},
		{name: "another annotation added", old: base(), new: func() *jobsetv1alpha2.JobSet {
			js := base()
			js.Spec.ReplicatedJobs[1].Template.Spec.Template.Annotations = map[string]string{"kueue.x-k8s.io/podset": "b"}
			return js
		}()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, e := range ValidateUpdate(tc.old, tc.new) {
				got = append(got, e.Field)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("refused at (-want +got):\n%s", diff)
			}
		})
	}
}
