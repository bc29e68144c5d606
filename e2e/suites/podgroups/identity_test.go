package podgroups_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	schedulingv1alpha3 "k8s.io/api/scheduling/v1alpha3"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	coschedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"
	volcanov1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/jobset-addons/jobset-addons/e2e/framework"
	"github.com/jobset-addons/jobset-addons/pkg/addon/addontest"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// gangKind is one kind of gang the testbed's schedulers are given, and how a JobSet asks for
// it. A Workload (the kubernetes scheduler's) and a CompositePodGroup (of a composite gang,
// which has one stage) are named as their JobSet, so no two JobSets' can share a name: the
// kubernetes scheduler's names that coincide are its PodGroups' (scheduling.k8s.io), a stage's
// or, in a composite gang, a Job's (named as the Job).
type gangKind struct {
	name      string
	scheduler contract.Scheduler
	composite bool
	// what names the object in a refusal or an Event.
	what string
}

var gangKinds = []gangKind{
	{name: "coscheduling PodGroup", scheduler: contract.SchedulerCoscheduling, what: "the coscheduling PodGroup"},
	{name: "Volcano PodGroup", scheduler: contract.SchedulerVolcano, what: "the volcano PodGroup"},
	{name: "kubernetes PodGroup (Workload API)", scheduler: contract.SchedulerKubernetes, what: "the kubernetes PodGroup"},
	{name: "composite gang's Job PodGroup", scheduler: contract.SchedulerKubernetes, composite: true, what: "the kubernetes PodGroup"},
}

// jobSet is a JobSet of the kind's gangs.
func (k gangKind) jobSet(ns, name string) *addontest.JobSetWrapper {
	j := newJobSet(ns, name, k.scheduler)
	if k.composite {
		j.Annotation(contract.CompositeAnnotationKey, "true")
	}
	return j
}

// require skips where the testbed does not serve the kind (framework.RequireWorkloadAPI).
func (k gangKind) require(ctx context.Context, t *testing.T, cfg *envconf.Config, ns string) {
	t.Helper()
	if k.scheduler == contract.SchedulerKubernetes {
		requireWorkloadAPI(t, cfg)
	}
	if k.composite {
		if err := framework.Client(t, cfg).List(ctx, &schedulingv1alpha3.CompositePodGroupList{}, client.InNamespace(ns)); err != nil {
			t.Skipf("n/a: the apiserver does not serve CompositePodGroup (scheduling.k8s.io/v1alpha3, gate CompositePodGroup): %v", err)
		}
	}
}

// object is an empty gang object of the kind.
func (k gangKind) object() client.Object {
	switch {
	case k.scheduler == contract.SchedulerKubernetes:
		return &schedulingv1beta1.PodGroup{}
	case k.scheduler == contract.SchedulerVolcano:
		return &volcanov1beta1.PodGroup{}
	}
	return &coschedv1alpha1.PodGroup{}
}

// holder waits for the kind's gang object name and returns the JobSet its labels name.
func (k gangKind) holder(ctx context.Context, t *testing.T, c client.Client, ns, name string) string {
	t.Helper()
	o := k.object()
	framework.Eventually(ctx, t, time.Minute, k.name+" "+name, func(ctx context.Context) (bool, string, error) {
		err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, o)
		return err == nil, fmt.Sprint(err), nil
	})
	return o.GetLabels()[contract.JobSetNameLabelKey]
}

// holderNow is the JobSet the kind's gang object name names now, "" when there is none.
func (k gangKind) holderNow(ctx context.Context, c client.Client, ns, name string) string {
	o := k.object()
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, o); err != nil {
		return ""
	}
	return o.GetLabels()[contract.JobSetNameLabelKey]
}

// gone tells whether the kind's gang object name is gone.
func (k gangKind) gone(ctx context.Context, c client.Client, ns, name string) bool {
	return apierrors.IsNotFound(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, k.object()))
}

// TestGangNameTaken: names are joined with "-", so stage 0 of the sequenced JobSet train and
// the JobSet train-stage-0 (not sequenced) both give the gang train-stage-0, of each kind (in a
// composite gang, JobSet train's Job train-stage-0 gives its PodGroup that name). While
// train's is there, train-stage-0 is refused at the scheduler annotation, naming JobSet train;
// train's gang object is left as it was.
func TestGangNameTaken(t *testing.T) {
	var fs []features.Feature
	for _, k := range gangKinds {
		fs = append(fs, framework.NamespacedFeature(k.name+": a gang name another JobSet holds is refused", "refused, naming the JobSet", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			c := framework.Client(t, cfg)
			ns := framework.NamespaceFrom(ctx)
			k.require(ctx, t, cfg, ns)
			train := k.jobSet(ns, "train").InOrder().ReplicatedJobs(replicated("init", 1, 2, "30s"), replicated("main", 1, 2, "3s")).Obj()
			other := k.jobSet(ns, "train-stage-0").ReplicatedJobs(replicated("w", 1, 2, "3s")).Obj()
			if k.composite { // Job train-stage-0's PodGroup against JobSet train-stage-0's
				train = k.jobSet(ns, "train").ReplicatedJobs(replicated("stage", 2, 1, "30s")).Obj()
				other = newJobSet(ns, "train-stage-0", k.scheduler).ReplicatedJobs(replicated("w", 1, 2, "3s")).Obj()
			}
			framework.CreateAll(ctx, t, c, train)
			if got := k.holder(ctx, t, c, ns, "train-stage-0"); got != "train" {
				t.Fatalf("%s train-stage-0 is JobSet %q's, want train's", k.name, got)
			}
			refusedAtScheduler(t, c.Create(ctx, other), k.what+" train-stage-0 exists and was made for JobSet train ")
			if got := k.holder(ctx, t, c, ns, "train-stage-0"); got != "train" {
				t.Errorf("%s train-stage-0 is JobSet %q's after the refusal, want train's still", k.name, got)
			}
			return ctx
		}))
	}
	testenv.Test(t, fs...)
}

// TestGangNameTakenAfterAdmission: JobSet train's second stage (its gang train-stage-1) is made
// only once that stage may run, and a JobSet train-stage-1 created while train lives is refused
// at admission (TestGangNameOfLivingJobSet); but two created at the same moment are both
// admitted, as neither is in podgroups' cache yet: the names coincide after admission. For each
// kind of gang object (createdAtOnce).
func TestGangNameTakenAfterAdmission(t *testing.T) {
	var fs []features.Feature
	for _, k := range gangKinds {
		fs = append(fs, createdAtOnce(k))
	}
	testenv.Test(t, fs...)
}

// TestGangNameOfLivingJobSet: JobSet train (sequenced) has not made its gated stage 1's gang
// train-stage-1 yet (the sequencer has not released it), but its Jobs exist: a JobSet
// train-stage-1 would make that gang first and have train's stage 1 pods join it once
// released. It is refused at the scheduler annotation, naming JobSet train, for as long as train
// has not finished; then it is admitted and runs.
func TestGangNameOfLivingJobSet(t *testing.T) {
	k := gangKinds[1] // Volcano's
	f := framework.NamespacedFeature(k.name+": a gang name a living JobSet will take", "refused until that JobSet finished", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		c := framework.Client(t, cfg)
		ns := framework.NamespaceFrom(ctx)
		train := k.jobSet(ns, "train").InOrder().ReplicatedJobs(replicated("init", 1, 2, "8s"), replicated("main", 1, 2, "2s")).Obj()
		framework.CreateAll(ctx, t, c, train)
		if got := k.holder(ctx, t, c, ns, "train-stage-0"); got != "train" {
			t.Fatalf("%s train-stage-0 is JobSet %q's, want train's", k.name, got)
		}
		if !k.gone(ctx, c, ns, "train-stage-1") {
			t.Fatalf("%s train-stage-1 exists while train's stage 0 runs: the test needs it not made yet", k.name)
		}
		other := k.jobSet(ns, "train-stage-1").ReplicatedJobs(replicated("w", 1, 2, "2s")).Obj()
		refusedAtScheduler(t, c.Create(ctx, other), k.what+" train-stage-1 would also be a gang of JobSet train, which has not finished")
		waitCompleted(ctx, t, c, train)
		framework.Eventually(ctx, t, time.Minute, "JobSet train-stage-1 admitted once train finished", func(ctx context.Context) (bool, string, error) {
			err := c.Create(ctx, k.jobSet(ns, "train-stage-1").ReplicatedJobs(replicated("w", 1, 2, "2s")).Obj())
			return err == nil, fmt.Sprint(err), nil
		})
		waitCompleted(ctx, t, c, other)
		return ctx
	})
	testenv.Test(t, f)
}

// createdTogether creates the two JobSets made (anew each attempt) at the same moment, until
// both are admitted (neither is in podgroups' cache as the other is judged), and returns them;
// after an attempt where one was refused, both and the gang object gang of kind k are deleted
// first.
func createdTogether(ctx context.Context, t *testing.T, c client.Client, k gangKind, gang string, made func() (*jobsetv1alpha2.JobSet, *jobsetv1alpha2.JobSet)) (*jobsetv1alpha2.JobSet, *jobsetv1alpha2.JobSet) {
	t.Helper()
	for attempt := 1; ; attempt++ {
		a, b := made()
		errs := make(chan error, 2)
		for _, js := range []*jobsetv1alpha2.JobSet{a, b} {
			go func() { errs <- c.Create(ctx, js) }()
		}
		e1, e2 := <-errs, <-errs
		if e1 == nil && e2 == nil {
			t.Logf("both admitted at attempt %d", attempt)
			return a, b
		}
		if attempt == 10 {
			t.Fatalf("not both admitted in %d attempts: %v; %v", attempt, e1, e2)
		}
		for _, js := range []*jobsetv1alpha2.JobSet{a, b} {
			_ = c.Delete(ctx, js, client.PropagationPolicy("Foreground"))
		}
		framework.Eventually(ctx, t, time.Minute, "both JobSets and the gang gone", func(ctx context.Context) (bool, string, error) {
			return k.gone(ctx, c, a.Namespace, gang) && apierrors.IsNotFound(c.Get(ctx, client.ObjectKeyFromObject(a), &jobsetv1alpha2.JobSet{})) &&
				apierrors.IsNotFound(c.Get(ctx, client.ObjectKeyFromObject(b), &jobsetv1alpha2.JobSet{})), "", nil
		})
	}
}

// refusedAtScheduler requires err, a JobSet's create, to be a refusal at the scheduler
// annotation, and only there, that says want.
func refusedAtScheduler(t *testing.T, err error, want string) {
	t.Helper()
	if err == nil {
		t.Fatalf("JobSet admitted; want it refused: %s", want)
	}
	if !strings.Contains(err.Error(), want) {
		t.Errorf("the refusal does not say %q: %v", want, err)
	}
	paths, _ := framework.CausePaths(err)
	if at := annotationPath(contract.SchedulerAnnotationKey); len(paths) != 1 || paths[0] != at {
		t.Errorf("refused at %q, want at %s only", paths, at)
	}
}

// GoesOnWithin is how soon after the other gang is gone a held Job must be created (or
// resumed): podgroups makes the gang and has JobSet retry the Job at once, not on JobSet's own
// back-off (seconds here, minutes after a long wait), nor on podgroups' own look every
// TakenRequeue.
const GoesOnWithin = 3 * time.Second

// goesOnSoon requires the held Job job, once the other gang is gone (now), created and not
// suspended within GoesOnWithin.
func goesOnSoon(ctx context.Context, t *testing.T, c client.Client, ns, job string) {
	t.Helper()
	gone := time.Now()
	framework.Eventually(ctx, t, 4*time.Minute, "Job "+job+" created and not suspended", func(ctx context.Context) (bool, string, error) {
		j := &batchv1.Job{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: job}, j); err != nil {
			return false, err.Error(), nil
		}
		return !ptr.Deref(j.Spec.Suspend, false), "suspended", nil
	})
	took := time.Since(gone)
	t.Logf("Job %s went on %v after the other gang was gone", job, took.Round(100*time.Millisecond))
	if took > GoesOnWithin {
		t.Errorf("Job %s went on %v after the other gang was gone, want within %v", job, took.Round(100*time.Millisecond), GoesOnWithin)
	}
}

// waitCompleted waits for the JobSet to complete.
func waitCompleted(ctx context.Context, t *testing.T, c client.Client, js *jobsetv1alpha2.JobSet) {
	t.Helper()
	framework.Eventually(ctx, t, 4*time.Minute, "JobSet "+js.Name+" Completed", func(ctx context.Context) (bool, string, error) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(js), js); err != nil {
			return false, err.Error(), nil
		}
		return apimeta.IsStatusConditionTrue(js.Status.Conditions, string(jobsetv1alpha2.JobSetCompleted)), fmt.Sprintf("conditions %+v", js.Status.Conditions), nil
	})
}

// createdAtOnce: a JobSet train whose gang train-stage-1 is not made at once (the sequenced
// train's gated stage 1; in a composite gang, its Job train-stage-1's PodGroup) and a JobSet
// train-stage-1 (its gang train-stage-1) created at the same moment, suspended (as Kueue queues
// them): both are admitted, as neither is in podgroups' cache yet (should one be refused, both
// are made again), and their Jobs created suspended, or held when created. Whichever gang is
// made first keeps the name (the first Job's webhook makes it); the other JobSet is told
// (PodGroupNameTaken) and, once both are resumed, its Job of that gang is not created or
// resumed while the first one runs. Once that finished and its gang is gone, the other
// completes too.
func createdAtOnce(k gangKind) features.Feature {
	return framework.NamespacedFeature(k.name+": two JobSets created at once", "the later gang's Job is not resumed until the other gang is gone", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		c := framework.Client(t, cfg)
		ns := framework.NamespaceFrom(ctx)
		k.require(ctx, t, cfg, ns)
		train, other := createdTogether(ctx, t, c, k, "train-stage-1", func() (*jobsetv1alpha2.JobSet, *jobsetv1alpha2.JobSet) {
			// Suspended: JobSet creates their Jobs suspended at once, before either gang exists.
			train := k.jobSet(ns, "train").Suspend(true).ReplicatedJobs(replicated("stage", 2, 1, "15s")).Obj()
			if !k.composite { // its gated stage 1's gang made once the sequencer releases it
				train = k.jobSet(ns, "train").InOrder().Suspend(true).ReplicatedJobs(replicated("init", 1, 1, "5s"), replicated("main", 1, 1, "2s")).Obj()
			}
			return train, newJobSet(ns, "train-stage-1", k.scheduler).Suspend(true).ReplicatedJobs(replicated("w", 1, 1, "15s")).Obj()
		})
		first, late, heldJob := train, other, "train-stage-1-w-0"
		if k.holder(ctx, t, c, ns, "train-stage-1") == other.Name {
			first, late, heldJob = other, train, "train-stage-1"
			if !k.composite {
				heldJob = "train-main-0"
			}
		}
		t.Logf("JobSet %s made the PodGroup train-stage-1 first", first.Name)
		for _, js := range []*jobsetv1alpha2.JobSet{train, other} {
			if err := retryUpdate(ctx, c, js, func() { js.Spec.Suspend = ptr.To(false) }); err != nil {
				t.Fatal(err)
			}
		}
		var msgs []string
		framework.Eventually(ctx, t, time.Minute, "PodGroupNameTaken on "+late.Name, func(ctx context.Context) (bool, string, error) {
			var err error
			msgs, err = framework.EventMessages(ctx, c, late, "PodGroupNameTaken")
			return len(msgs) > 0, "", err
		})
		if !strings.Contains(msgs[0], strings.TrimPrefix(k.what, "the ")+" train-stage-1 exists and was made for JobSet "+first.Name+" ") {
			t.Errorf("PodGroupNameTaken %q: want it to name the PodGroup train-stage-1 and JobSet %s", msgs, first.Name)
		}
		from := time.Now()
		for ; k.holderNow(ctx, c, ns, "train-stage-1") == first.Name; time.Sleep(200 * time.Millisecond) {
			// Not created (JobSet made it after the gang), or created suspended and not resumed.
			job := &batchv1.Job{}
			if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: heldJob}, job); !apierrors.IsNotFound(err) && (err != nil || !ptr.Deref(job.Spec.Suspend, false)) {
				t.Fatalf("JobSet %s's Job %s was resumed (%v) while the PodGroup train-stage-1 is JobSet %s's: its pods join that gang", late.Name, heldJob, err, first.Name)
			}
		}
		if seen := time.Since(from); seen < 3*time.Second {
			t.Errorf("%s's Job seen held for %v only: %s's gang went too soon to tell", late.Name, seen.Round(100*time.Millisecond), first.Name)
		}
		goesOnSoon(ctx, t, c, ns, heldJob)
		framework.WaitJobSet(ctx, t, c, first, jobsetv1alpha2.JobSetCompleted)
		waitCompleted(ctx, t, c, late)
		return ctx
	})
}
