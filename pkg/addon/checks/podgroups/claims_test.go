package podgroups

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/jobset-addons/jobset-addons/pkg/addon/addontest"
	"github.com/jobset-addons/jobset-addons/pkg/addon/jobsets"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// TestJobClaimsAgree: jobClaims, decided from what Read knows already, agrees with
// jobsets.ClaimsOnPodGroup, the rule resourceclaims reads too, for every ReplicatedJob of every
// shape: scheduler, composite or not, sequenced or not, one Job or two, and the number of
// templates (none, one, more than a PodGroup lists).
func TestJobClaimsAgree(t *testing.T) {
	one := `[{metadata: {name: data}, spec: {}}]`
	var many []string
	for i := range jobsets.MaxPodGroupClaims + 1 {
		many = append(many, `{metadata: {name: c`+strings.Repeat("x", i)+`}, spec: {}}`)
	}
	for _, scheduler := range []string{"volcano", "kubernetes"} {
		for _, extra := range [][]string{nil, {contract.CompositeAnnotationKey, "true"}, {inOrder, "InOrder"}} {
			for _, templates := range []string{"", one, "[" + strings.Join(many, ",") + "]"} {
				a := kv(append([]string{contract.SchedulerAnnotationKey, scheduler}, extra...)...)
				js := addontest.JobSet("ns", "train").Annotations(a).ReplicatedJobs(
					addontest.ReplicatedJob("a").Requests("1", "1Gi"),
					addontest.ReplicatedJob("b").Replicas(2).Requests("1", "1Gi"),
				).Obj()
				for i := range js.Spec.ReplicatedJobs {
					if templates != "" {
						js.Spec.ReplicatedJobs[i].Template.Annotations = kv(contract.TemplatesAnnotationKey, templates)
					}
				}
				s, _ := Parse(js)
				stages, errs := jobsets.Stages(js)
				if len(errs) > 0 {
					t.Fatal(errs)
				}
				got := jobClaims(js, s, stages)
				for _, r := range js.Spec.ReplicatedJobs {
					parsed, _ := contract.ParseResourceClaimTemplates(r.Template.Annotations[contract.TemplatesAnnotationKey], field.NewPath("t"))
					if want := templates != "" && jobsets.ClaimsOnPodGroup(js, r.Name, len(parsed)); want != (got[r.Name] != nil) {
						t.Errorf("%s %v, %d templates, ReplicatedJob %s: claims %v, ClaimsOnPodGroup %t", scheduler, extra, len(parsed), r.Name, got[r.Name], want)
					}
				}
			}
		}
	}
}
