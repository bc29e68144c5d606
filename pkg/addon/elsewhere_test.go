package addon

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// A JobSet managed elsewhere is cached as its metadata without the add-ons' annotations and its
// spec.managedBy: no add-on's uses takes it for one that uses it. The add-on's tell is called
// with it whole, and only if it uses the add-on.
func TestJobSetsUsingManagedElsewhere(t *testing.T) {
	usesAny := func(js *jobsetv1alpha2.JobSet) bool {
		_, policies := js.Annotations[contract.PoliciesAnnotationKey]
		_, scheduler := js.Annotations[contract.SchedulerAnnotationKey]
		return policies || scheduler || (len(js.Spec.ReplicatedJobs) > 0 && js.Spec.ReplicatedJobs[0].Template.Annotations[contract.TemplatesAnnotationKey] != "")
	}
	for name, tc := range map[string]struct {
		managedBy *string
		uses      func(*jobsetv1alpha2.JobSet) bool
		wantTold  []string
		wantWhole bool
	}{
		"MultiKueue, used":        {managedBy: ptr.To("kueue.x-k8s.io/multikueue"), uses: usesAny, wantTold: []string{"kueue.x-k8s.io/multikueue"}},
		"MultiKueue, not used":    {managedBy: ptr.To("kueue.x-k8s.io/multikueue"), uses: func(*jobsetv1alpha2.JobSet) bool { return false }},
		"JobSet's own controller": {managedBy: ptr.To(contract.JobSetControllerManagedBy), uses: usesAny, wantWhole: true},
		"unset":                   {uses: usesAny, wantWhole: true},
	} {
		var told []string
		got, err := jobSetsUsing(tc.uses, func(js *jobsetv1alpha2.JobSet) {
			if len(js.Spec.ReplicatedJobs) == 0 {
				t.Errorf("%s: told of a JobSet already trimmed", name)
			}
			told = append(told, *js.Spec.ManagedBy)
		}).Transform(managedJobSet(tc.managedBy))
		if err != nil {
			t.Fatal(err)
		}
		js := got.(*jobsetv1alpha2.JobSet)
		if diff := cmp.Diff(tc.wantTold, told); diff != "" {
			t.Errorf("%s: told (-want +got):\n%s", name, diff)
		}
		if tc.wantWhole {
			if len(js.Spec.ReplicatedJobs) != 1 || len(js.Annotations) != 3 {
				t.Errorf("%s: a JobSet of this cluster was trimmed: %+v", name, js)
			}
			continue
		}
		want := jobsetv1alpha2.JobSet{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "js", UID: "uid-js", Labels: map[string]string{"l": "v"}, Annotations: map[string]string{"kueue.x-k8s.io/queue-name": "q"}},
			Spec:       jobsetv1alpha2.JobSetSpec{ManagedBy: tc.managedBy},
		}
		if diff := cmp.Diff(want, *js); diff != "" {
			t.Errorf("%s: cached (-want +got):\n%s", name, diff)
		}
		if usesAny(js) {
			t.Errorf("%s: what is cached of a JobSet managed elsewhere uses the add-on", name)
		}
	}
}

func TestElsewhereAddsOnce(t *testing.T) {
	e := newElsewhere()
	defer e.queue.ShutDown()
	js := managedJobSet(ptr.To("kueue.x-k8s.io/multikueue"))
	e.Add(js)
	e.Add(js)
	if n := e.queue.Len(); n != 1 {
		t.Fatalf("queued %d, want 1", n)
	}
	got, _ := e.queue.Get()
	e.queue.Done(got)
	if want := (elsewhereJobSet{namespace: "ns", name: "js", uid: "uid-js", managedBy: "kueue.x-k8s.io/multikueue"}); got != want {
		t.Errorf("queued %+v, want %+v", got, want)
	}
	e.Forget(js.UID)
	e.Add(js)
	if n := e.queue.Len(); n != 1 {
		t.Errorf("after Forget, queued %d, want 1", n)
	}
}

type countingDefaulter struct{ calls int }

func (d *countingDefaulter) Default(context.Context, *jobsetv1alpha2.JobSet) error {
	d.calls++
	return nil
}

// The mutating webhook leaves a JobSet managed elsewhere as it is; JobSets of this cluster are
// defaulted.
func TestHereOnly(t *testing.T) {
	d := &countingDefaulter{}
	h := hereOnly[*jobsetv1alpha2.JobSet]{d}
	for _, managedBy := range []*string{nil, ptr.To(contract.JobSetControllerManagedBy), ptr.To("kueue.x-k8s.io/multikueue"), ptr.To("example.com/other")} {
		if err := h.Default(context.Background(), managedJobSet(managedBy)); err != nil {
			t.Fatal(err)
		}
	}
	if d.calls != 2 {
		t.Errorf("defaulted %d JobSets, want 2 (unset, JobSet's own controller)", d.calls)
	}
}
