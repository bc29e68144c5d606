package addon

import (
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/pkg/addon/addontest"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

type doneNow struct{}

func (doneNow) Name() string { return "synced" }
func (doneNow) Done() <-chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}

func TestUsesTrimsJobsOfOtherJobSets(t *testing.T) {
	u := &usesCache{uses: func(js *jobsetv1alpha2.JobSet) bool { return js.Annotations["mine"] != "" }, waitUpTo: time.Second}
	byObject := u.withUses(map[client.Object]cache.ByObject{
		&batchv1.Job{}: JobsOfJobSets(nil),
	})
	var jobs cache.ByObject
	for obj, by := range byObject {
		switch obj.(type) {
		case *batchv1.Job:
			jobs = by
		case *jobsetv1alpha2.JobSet:
			if by.Transform == nil {
				t.Error("the JobSets' cache is not trimmed")
			}
		}
	}
	store := toolscache.NewStore(toolscache.MetaNamespaceKeyFunc)
	for _, js := range []*jobsetv1alpha2.JobSet{
		addontest.JobSet("ns", "ours").UID("u-ours").Annotation("mine", "yes").Obj(),
		addontest.JobSet("ns", "other").UID("u-other").Obj(),
	} {
		if err := store.Add(js); err != nil {
			t.Fatal(err)
		}
	}
	job := func(jobSet string, uid types.UID) *batchv1.Job {
		js := addontest.JobSet("ns", jobSet).ReplicatedJobs(addontest.ReplicatedJob("w").Parallelism(2)).Obj()
		return addontest.Job(js, "w", 0).Label(contract.JobSetUIDLabelKey, string(uid)).
			Annotation(contract.TemplatesAnnotationKey, "[]").Succeeded(2).Obj()
	}
	// Before the manager gives the store: every Job is kept.
	if got, _ := jobs.Transform(job("other", "u-other")); got.(*batchv1.Job).Spec.Parallelism == nil {
		t.Fatal("a Job trimmed before the JobSets' cache exists")
	}
	u.jobSets.Store(&jobSetStore{store: store, synced: doneNow{}})
	for name, c := range map[string]struct {
		job     *batchv1.Job
		trimmed bool
	}{
		"of a JobSet that uses the add-on":       {job("ours", "u-ours"), false},
		"of a JobSet that does not":              {job("other", "u-other"), true},
		"of a JobSet the cache does not show":    {job("unknown", "u-unknown"), false},
		"of an older JobSet of the same name":    {job("other", "u-older"), false},
		"of a JobSet that does not, without UID": {job("other", ""), true},
	} {
		got, err := jobs.Transform(c.job)
		if err != nil {
			t.Fatal(err)
		}
		j := got.(*batchv1.Job)
		if trimmed := j.Spec.Parallelism == nil && j.Status.Succeeded == 0 && j.Annotations == nil; trimmed != c.trimmed {
			t.Errorf("%s: trimmed %v, want %v: %+v", name, trimmed, c.trimmed, j)
		}
		if len(j.Spec.Template.Spec.Containers) != 0 || j.Labels[contract.JobSetNameLabelKey] == "" {
			t.Errorf("%s: pod template kept or labels lost: %+v", name, j)
		}
	}
}
