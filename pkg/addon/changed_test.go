package addon

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
)

func TestChangesOf(t *testing.T) {
	completed := func(js *jobsetv1alpha2.JobSet) string {
		for _, c := range js.Status.Conditions {
			if c.Type == string(jobsetv1alpha2.JobSetCompleted) {
				return string(c.Status)
			}
		}
		return ""
	}
	base := func() *jobsetv1alpha2.JobSet {
		return &jobsetv1alpha2.JobSet{ObjectMeta: metav1.ObjectMeta{Name: "js", Generation: 1, Labels: map[string]string{"l": "1"}, Annotations: map[string]string{"a": "1"}}}
	}
	cases := map[string]struct {
		change          func(*jobsetv1alpha2.JobSet)
		want, stateless bool
	}{
		"nothing": {change: func(*jobsetv1alpha2.JobSet) {}},
		"the Jobs' counts": {change: func(js *jobsetv1alpha2.JobSet) {
			js.Status.ReplicatedJobsStatus = []jobsetv1alpha2.ReplicatedJobStatus{{Name: "w", Ready: 3}}
		}},
		"the resourceVersion": {change: func(js *jobsetv1alpha2.JobSet) { js.ResourceVersion = "2" }},
		"the state": {change: func(js *jobsetv1alpha2.JobSet) {
			js.Status.Conditions = []metav1.Condition{{Type: "Completed", Status: "True"}}
		}, want: true},
		"the spec":      {change: func(js *jobsetv1alpha2.JobSet) { js.Generation = 2 }, want: true, stateless: true},
		"a label":       {change: func(js *jobsetv1alpha2.JobSet) { js.Labels["l"] = "2" }, want: true, stateless: true},
		"an annotation": {change: func(js *jobsetv1alpha2.JobSet) { js.Annotations["b"] = "" }, want: true, stateless: true},
		"an owner": {change: func(js *jobsetv1alpha2.JobSet) {
			js.OwnerReferences = []metav1.OwnerReference{{Name: "o", UID: "u"}}
		}, want: true, stateless: true},
		"the deletion": {change: func(js *jobsetv1alpha2.JobSet) { now := metav1.Now(); js.DeletionTimestamp = &now }, want: true, stateless: true},
	}
	for _, withState := range []bool{true, false} {
		p := ChangesOf(completed)
		if !withState {
			p = ChangesOf[*jobsetv1alpha2.JobSet](nil)
		}
		for name, c := range cases {
			after := base()
			c.change(after)
			want := c.want && (withState || c.stateless)
			if got := p.Update(event.UpdateEvent{ObjectOld: base(), ObjectNew: after}); got != want {
				t.Errorf("%s (state read: %v): passed %v, want %v", name, withState, got, want)
			}
		}
		if !p.Create(event.CreateEvent{Object: base()}) || !p.Delete(event.DeleteEvent{Object: base()}) {
			t.Error("a creation or a deletion did not pass")
		}
	}
}
