package addon

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// jobSetWait is how long the cache, given its first Job, waits for the JobSets' cache to sync,
// so that it knows whether each Job listed at the start belongs to a JobSet that uses the
// add-on. Past it, a Job whose JobSet the cache does not show is kept.
const jobSetWait = 30 * time.Second

// usesCache trims, in an add-on's cache, the JobSets that do not use it (JobSetsUsing) and their
// Jobs: of those, only the metadata the Job's events need to name their JobSet (its labels,
// owner references), read from the add-on's own cache of JobSets. Every JobSet's Jobs are cached
// (they cannot be selected by their JobSet's annotations), and at 1,000 JobSets using the
// add-ons beside 1,000 that did not, half of the cached Jobs were the latter's (make bench
// ADDON=scale).
type usesCache struct {
	uses func(*jobsetv1alpha2.JobSet) bool
	// elsewhere tells of the JobSets managed elsewhere that use the add-on (JobSetsUsing).
	elsewhere *elsewhere
	jobSets   atomic.Pointer[jobSetStore]
	waited    atomic.Bool
	waitUpTo  time.Duration
}

type jobSetStore struct {
	store  toolscache.Store
	synced toolscache.DoneChecker
}

// withUses trims byObject's JobSets and Jobs (if Jobs are cached) by uses.
func (u *usesCache) withUses(byObject map[client.Object]cache.ByObject) map[client.Object]cache.ByObject {
	out := make(map[client.Object]cache.ByObject, len(byObject)+1)
	var tell func(*jobsetv1alpha2.JobSet)
	if u.elsewhere != nil {
		tell = u.elsewhere.Add
	}
	jobSets := jobSetsUsing(u.uses, tell)
	for obj, by := range byObject {
		switch obj.(type) {
		case *jobsetv1alpha2.JobSet:
			jobSets.Label, jobSets.Field, jobSets.Namespaces = by.Label, by.Field, by.Namespaces
			continue
		case *batchv1.Job:
			if by.Transform != nil {
				trim := by.Transform
				by.Transform = func(o any) (any, error) {
					o, err := trim(o)
					if job, ok := o.(*batchv1.Job); ok && err == nil && u.unused(job) {
						job.Spec, job.Status, job.Annotations = batchv1.JobSpec{}, batchv1.JobStatus{}, nil
					}
					return o, err
				}
			}
		}
		out[obj] = by
	}
	out[&jobsetv1alpha2.JobSet{}] = jobSets
	return out
}

// from takes the JobSets' store from c, once the manager exists.
func (u *usesCache) from(ctx context.Context, c cache.Cache) error {
	inf, err := c.GetInformer(ctx, &jobsetv1alpha2.JobSet{}, cache.BlockUntilSynced(false))
	if err != nil {
		return fmt.Errorf("getting the JobSets' informer: %w", err)
	}
	s, ok := inf.(interface{ GetStore() toolscache.Store })
	if !ok {
		return fmt.Errorf("the JobSets' informer (%T) has no store", inf)
	}
	u.jobSets.Store(&jobSetStore{store: s.GetStore(), synced: inf.HasSyncedChecker()})
	if u.elsewhere != nil {
		if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{DeleteFunc: func(o any) {
			if d, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
				o = d.Obj
			}
			if js, ok := o.(*jobsetv1alpha2.JobSet); ok {
				u.elsewhere.Forget(js.UID)
			}
		}}); err != nil {
			return fmt.Errorf("watching JobSets' deletions: %w", err)
		}
	}
	return nil
}

// unused tells whether the cache shows job's JobSet, and that it does not use the add-on.
func (u *usesCache) unused(job *batchv1.Job) bool {
	s := u.jobSets.Load()
	if s == nil {
		return false
	}
	if !u.waited.Load() {
		select {
		case <-s.synced.Done():
		case <-time.After(u.waitUpTo):
		}
		u.waited.Store(true)
	}
	obj, ok, err := s.store.GetByKey(job.Namespace + "/" + job.Labels[contract.JobSetNameLabelKey])
	js, isJobSet := obj.(*jobsetv1alpha2.JobSet)
	if err != nil || !ok || !isJobSet {
		return false
	}
	if uid := job.Labels[contract.JobSetUIDLabelKey]; uid != "" && uid != string(js.UID) {
		return false
	}
	return !u.uses(js)
}
