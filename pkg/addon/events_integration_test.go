package addon

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/pkg/addon/addontest"
)

// TestEventsOnAPIServer writes Events through the add-ons' own broadcaster to a real apiserver
// (envtest, on the testbed's binaries) and reads every note back: those told with Tell are
// each an Event, where the recorder's own Eventf folds notes of one key into the first; and
// the Event about a JobSet managed elsewhere is one, whichever add-ons write it.
func TestEventsOnAPIServer(t *testing.T) {
	rc := startAPIServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	httpClient, err := rest.HTTPClientFor(rc)
	if err != nil {
		t.Fatal(err)
	}
	b, cl, _, err := startEvents(ctx, rc, httpClient, 100, 100)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Shutdown()
	scheme := runtime.NewScheme()
	if err := jobsetv1alpha2.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	rec := noteLimit{b.NewRecorder(scheme, "test.jobset-addons.io")}
	const ns = "default"
	told := addontest.JobSet(ns, "told").UID("00000000-0000-0000-0000-000000000001").Obj()
	folded := addontest.JobSet(ns, "folded").UID("00000000-0000-0000-0000-000000000002").Obj()
	notes := []string{"2 claims failed: quota", "3 claims failed: quota", "1 claims failed: forbidden", "2 claims failed: quota"}
	for _, note := range notes {
		Tell(rec, told, nil, corev1.EventTypeWarning, "ClaimsFailed", "Create", "%s", note)
		rec.Eventf(folded, nil, corev1.EventTypeWarning, "ClaimsFailed", "Create", "%s", note)
		time.Sleep(50 * time.Millisecond) // in order, as reconciles are
	}
	j := elsewhereJobSet{namespace: ns, name: "elsewhere", uid: "00000000-0000-0000-0000-000000000003", managedBy: "kueue.x-k8s.io/multikueue"}
	if err := tellElsewhere(ctx, cl, "volumeclaims.jobset-addons.io", "volumeclaims-a", j); err != nil {
		t.Fatal(err)
	}
	if err := tellElsewhere(ctx, cl, "podgroups.jobset-addons.io", "podgroups-a", j); err != nil {
		t.Errorf("the second add-on telling the same JobSet: %v, want nil (the Event exists)", err)
	}

	byJobSet := map[string][]string{}
	var elsewhere []eventsv1.Event
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		list, err := cl.Events(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		byJobSet, elsewhere = map[string][]string{}, nil
		for _, e := range list.Items {
			byJobSet[e.Regarding.Name] = append(byJobSet[e.Regarding.Name], e.Note)
			if e.Regarding.Name == "elsewhere" {
				elsewhere = append(elsewhere, e)
			}
		}
		// The folded series is patched with its count 2 on the second note; later ones only count.
		return len(byJobSet["told"]) == 3 && len(byJobSet["folded"]) == 1 && len(elsewhere) == 1, nil
	}); err != nil {
		t.Fatalf("Events by JobSet: %v (elsewhere: %d): %v", byJobSet, len(elsewhere), err)
	}
	got := slices.Sorted(slices.Values(byJobSet["told"]))
	if diff := cmp.Diff([]string{"1 claims failed: forbidden", "2 claims failed: quota", "3 claims failed: quota"}, got); diff != "" {
		t.Errorf("notes told with Tell (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{notes[0]}, byJobSet["folded"]); diff != "" {
		t.Errorf("notes told with Eventf, one key (-want +got): the series keeps the first only:\n%s", diff)
	}
	e := elsewhere[0]
	if e.Name != ElsewhereEventName("00000000-0000-0000-0000-000000000003") || e.Reason != ReasonManagedElsewhere || e.Type != corev1.EventTypeNormal ||
		e.Note != ElsewhereNote("kueue.x-k8s.io/multikueue") || e.ReportingController != "volumeclaims.jobset-addons.io" || e.Regarding.Kind != "JobSet" {
		t.Errorf("the Event about a JobSet managed elsewhere: %+v", e)
	}
}
