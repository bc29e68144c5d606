package podgroups

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/jobset-addons/jobset-addons/pkg/addon/addontest"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// TestComposite: the annotation parses for kubernetes only; a composite gang lists its Jobs,
// each with its pods and (resourceclaims templates) its claims, and its children are one gang
// per Job under it; bad values are refused with their paths (sequencing: backend's
// TestCompositeValidate).
func TestComposite(t *testing.T) {
	const compositePath = "metadata.annotations[podgroups.jobset-addons.io/composite]"
	native := func(kvs ...string) map[string]string {
		return kv(append(kvs, contract.SchedulerAnnotationKey, "kubernetes", contract.CompositeAnnotationKey, "true")...)
	}
	a := addontest.ReplicatedJob("a").Replicas(2).Parallelism(3).Requests("1", "1Gi").
		JobAnnotation(contract.TemplatesAnnotationKey, `[{metadata: {name: data}, spec: {}}]`)
	js := addontest.JobSet("ns", "train").Annotations(native()).ReplicatedJobs(a, addontest.ReplicatedJob("b").Requests("1", "1Gi")).Obj()

	s, errs := Parse(js)
	if len(errs) > 0 || !s.Composite {
		t.Fatalf("Parse = %+v, %v; want composite", s, errs)
	}
	gangs, errs := Gangs(js, s)
	if len(errs) > 0 || len(gangs) != 1 {
		t.Fatalf("Gangs = %+v, %v", gangs, errs)
	}
	want := []Job{
		{Name: "train-a-0", ReplicatedJob: "a", Pods: 3, Claims: []string{"data"}},
		{Name: "train-a-1", ReplicatedJob: "a", Pods: 3, Claims: []string{"data"}},
		{Name: "train-b-0", ReplicatedJob: "b", Pods: 1},
	}
	if diff := cmp.Diff(want, gangs[0].Jobs); diff != "" {
		t.Errorf("Jobs (-want +got):\n%s", diff)
	}
	if gangs[0].Claims != nil {
		t.Errorf("the composite gang itself lists claims %v", gangs[0].Claims)
	}
	children := gangs[0].Children()
	if len(children) != 3 || children[1].Name != "train-a-1" || children[1].Parent.Name != "train" || children[1].Template != "a" ||
		children[1].MinMember != 3 || children[1].ClaimsJob("train") != "train-a-1" {
		t.Errorf("children %+v", children)
	}
	for name, tc := range map[string]struct {
		annotations map[string]string
		parse       []string
	}{
		"for volcano": {annotations: kv(contract.SchedulerAnnotationKey, "volcano", contract.CompositeAnnotationKey, "true"),
			parse: []string{fe(field.ErrorTypeForbidden, compositePath)}},
		"not a boolean": {annotations: kv(contract.SchedulerAnnotationKey, "kubernetes", contract.CompositeAnnotationKey, "yes"),
			parse: []string{fe(field.ErrorTypeNotSupported, compositePath)}},
	} {
		t.Run(name, func(t *testing.T) {
			js := addontest.JobSet("ns", "train").Annotations(tc.annotations).ReplicatedJobs(
				addontest.ReplicatedJob("a").Requests("1", "1Gi"),
				addontest.ReplicatedJob("b").Requests("1", "1Gi"),
			).Obj()
			_, perrs := Parse(js)
			if diff := cmp.Diff(tc.parse, errsOf(perrs)); diff != "" {
				t.Errorf("Parse errors (-want +got):\n%s", diff)
			}
		})
	}
}
