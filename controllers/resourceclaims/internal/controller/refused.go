package controller

import (
	"fmt"
	"sort"
	"strings"
	"sync"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/pkg/addon"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// refusals collects, in one reconcile, the claims whose creation the API server refused for
// good (addon.Refused: a template it does not accept, for example after an upgrade), by
// template and cause.
type refusals struct {
	mu     sync.Mutex
	causes map[string]*refusal // template and cause
}

type refusal struct {
	template, job string
	names         []string
	err           error
}

func (r *refusals) add(a action, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	template := a.create.Labels[contract.ResourceClaimTemplateLabelKey]
	key := template + "\x00" + addon.Cause(err)
	if r.causes == nil {
		r.causes = map[string]*refusal{}
	}
	if r.causes[key] == nil {
		r.causes[key] = &refusal{template: template, job: a.jobName, err: err}
	}
	r.causes[key].names = append(r.causes[key].names, a.create.Name)
}

// tell emits one Warning per template and cause the JobSet has not been told of yet (not one
// per retry), and returns the refusals as an error, so that the reconcile is retried with the
// controller's back-off: the cause may be fixed (a ValidatingAdmissionPolicy removed, a
// feature gate turned on) without anything the controller watches changing.
func (r *refusals) tell(js *jobsetv1alpha2.JobSet, told *addon.RefusalsTold, rec events.EventRecorder) error {
	if len(r.causes) == 0 {
		return nil
	}
	keys := make([]string, 0, len(r.causes))
	for k := range r.causes {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var msgs []string
	for _, k := range keys {
		f := r.causes[k]
		reconcileErrors.WithLabelValues("refused").Add(float64(len(f.names)))
		msgs = append(msgs, fmt.Sprintf("template %s: %v", f.template, f.err))
		if !told.First(types.NamespacedName{Namespace: js.Namespace, Name: js.Name}.String(), string(js.UID)+"\x00"+k) {
			continue
		}
		sort.Strings(f.names)
		rec.Eventf(js, &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: js.Namespace, Name: f.job}}, corev1.EventTypeWarning, ReasonRefused, actionCreate,
			"The API server refuses the ResourceClaims of template %s (%d, such as %s) and will go on refusing them as they are: %v. "+
				"The pods that use them wait; the JobSet is not failed (JobSet owns its status): delete it, and create it again with the template fixed. Retried with back-off",
			f.template, len(f.names), f.names[0], f.err)
	}
	return fmt.Errorf("the API server refuses ResourceClaims: %s", strings.Join(msgs, "; "))
}
