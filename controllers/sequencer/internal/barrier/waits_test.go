package barrier

import (
	"context"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/pkg/addon/addontest"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// TestWaits: the JobSets with pods at their start barrier, from the oldest barrier
// container's start, counting only member pods (their controller a Job the JobSet's controller
// made): a bare pod with the JobSet's labels, or one of a Job the JobSet did not make, is not
// counted however early it started.
func TestWaits(t *testing.T) {
	started := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	js := addontest.JobSet("ns", "a").UID("a-uid").ReplicatedJobs(addontest.ReplicatedJob("w").Replicas(2)).Obj()
	member := addontest.Job(js, "w", 0).ControlledBy(js).Attempt(0).UID("w-0").Obj()
	stranger := addontest.Job(js, "w", 1).Attempt(0).Obj() // no controller: not the JobSet's
	stranger.UID = "stranger"
	pod := func(name, jobSet, node string, running bool, job *batchv1.Job, at time.Time) *corev1.Pod {
		p := addontest.Pod("ns", jobSet, "w", 0, 0).Name(name).UID(name).Obj()
		if job != nil {
			p = addontest.Pod("ns", jobSet, "w", 0, 0).Name(name).UID(name).ControlledBy(job).Obj()
		}
		p.Spec.NodeName = node
		s := corev1.ContainerStatus{Name: contract.StartBarrierContainerName}
		if running {
			s.State.Running = &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(at)}
		}
		p.Status.InitContainerStatuses = []corev1.ContainerStatus{s}
		return p
	}
	c := fakeClient(js, member, stranger,
		pod("a-0", "a", "n1", true, member, started),                        // at the barrier
		pod("a-1", "a", "", false, member, time.Time{}),                     // not scheduled: not at it
		pod("b-0", "b", "n1", false, nil, time.Time{}),                      // its barrier container not running
		pod("forged", "a", "n1", true, nil, started.Add(-time.Hour)),        // a bare pod with a's labels
		pod("stranger", "a", "n1", true, stranger, started.Add(-time.Hour)), // of a Job a did not make
		pod("orphan", "gone", "n1", true, nil, started.Add(-time.Hour)),     // of no JobSet
	)
	waits, err := Waits(context.Background(), c, c)
	if err != nil {
		t.Fatal(err)
	}
	if len(waits) != 1 || waits[0].Key != "ns/a" || waits[0].Reason != WaitReason || !waits[0].Since.Equal(started) {
		t.Errorf("waits = %+v, want one: ns/a at the barrier since %v", waits, started)
	}
}

func fakeClient(objs ...client.Object) client.Client {
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = jobsetv1alpha2.AddToScheme(scheme)
	return fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).Build()
}
