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
	// resume: the later JobSet's Jobs are created suspended, and held when resumed; else held
	// when created (upstream dependsOn creates them once their stage may run).
	resume bool
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
			err := c.Create(ctx, other)
			if err == nil {
				t.Fatalf("JobSet train-stage-0 admitted; want it refused: its %s train-stage-0 is JobSet train's stage 0", k.name)
			}
			if !strings.Contains(err.Error(), k.what+" train-stage-0 exists and was made for JobSet train ") {
				t.Errorf("the refusal does not name %s train-stage-0 and its JobSet: %v", k.what, err)
			}
			paths, _ := framework.CausePaths(err)
			if want := annotationPath(contract.SchedulerAnnotationKey); len(paths) != 1 || paths[0] != want {
				t.Errorf("refused at %q, want at %s", paths, want)
			}
			if got := k.holder(ctx, t, c, ns, "train-stage-0"); got != "train" {
				t.Errorf("%s train-stage-0 is JobSet %q's after the refusal, want train's still", k.name, got)
			}
			return ctx
		}))
	}
	testenv.Test(t, fs...)
}

// TestGangNameTakenAfterAdmission: JobSet train's second stage (its gang train-stage-1) is made
// only once that stage may run, so JobSet train-stage-1, created after train was admitted, is
// admitted too and makes its gang train-stage-1 first: the names coincide after admission.
// When train's second stage comes, its Job is held — not created (upstream dependsOn creates
// it then), or, for a Job created suspended, not resumed — so that its pods never join
// train-stage-1's gang; train is told (PodGroupNameTaken), naming the object and JobSet
// train-stage-1, whose gang is left as it was. Once train-stage-1 finished and its gang is gone,
// train's Job goes on and train completes. For each kind of gang object.
func TestGangNameTakenAfterAdmission(t *testing.T) {
	var fs []features.Feature
	for _, k := range gangKinds {
		if k.composite {
			fs = append(fs, createdAtOnce(k))
			continue
		}
		path := "created"
		if k.resume {
			path = "resumed"
		}
		fs = append(fs, framework.NamespacedFeature(k.name+": a gang name taken after admission", "the Job is not "+path+" until the other gang is gone", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			c := framework.Client(t, cfg)
			ns := framework.NamespaceFrom(ctx)
			k.require(ctx, t, cfg, ns)
			main := replicated("main", 1, 2, "2s")
			train := k.jobSet(ns, "train")
			if k.resume {
				train.InOrder().Suspend(true) // every Job created suspended; stage 1's gang made once the sequencer releases it
			} else {
				main.DependsOn("init") // main's Job created once init completed
			}
			js := train.ReplicatedJobs(replicated("init", 1, 2, "5s"), main).Obj()
			framework.CreateAll(ctx, t, c, js)
			if k.resume {
				framework.Eventually(ctx, t, time.Minute, "train's Jobs, suspended", func(ctx context.Context) (bool, string, error) {
					var jobs batchv1.JobList
					err := c.List(ctx, &jobs, client.InNamespace(ns), client.MatchingLabels{contract.JobSetNameLabelKey: "train"})
					return err == nil && len(jobs.Items) == 2, fmt.Sprint(len(jobs.Items), err), nil
				})
			}
			other := k.jobSet(ns, "train-stage-1").ReplicatedJobs(replicated("w", 1, 2, "15s")).Obj()
			framework.CreateAll(ctx, t, c, other)
			if got := k.holder(ctx, t, c, ns, "train-stage-1"); got != "train-stage-1" {
				t.Fatalf("%s train-stage-1 is JobSet %q's, want train-stage-1's", k.name, got)
			}
			if k.resume {
				if err := retryUpdate(ctx, c, js, func() { js.Spec.Suspend = ptr.To(false) }); err != nil {
					t.Fatal(err)
				}
			}
			start := time.Now()
			var msgs []string
			framework.Eventually(ctx, t, time.Minute, "PodGroupNameTaken", func(ctx context.Context) (bool, string, error) {
				var err error
				msgs, err = framework.EventMessages(ctx, c, js, "PodGroupNameTaken")
				return len(msgs) > 0, "", err
			})
			t.Logf("PodGroupNameTaken after %v: %s", time.Since(start).Round(100*time.Millisecond), msgs[0])
			if !strings.Contains(msgs[0], strings.TrimPrefix(k.what, "the ")+" train-stage-1 exists and was made for JobSet train-stage-1 ") {
				t.Errorf("PodGroupNameTaken %q: want it to name %s train-stage-1 and JobSet train-stage-1", msgs, k.what)
			}
			// train's stage 0 runs 5 s; its main Job must stay held while train-stage-1's gang is there.
			held := func(ctx context.Context) (string, bool) {
				job := &batchv1.Job{}
				err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "train-main-0"}, job)
				switch {
				case apierrors.IsNotFound(err):
					return "not created", !k.resume
				case err != nil:
					return err.Error(), false
				case ptr.Deref(job.Spec.Suspend, false):
					return "suspended", k.resume
				}
				return "created and running", false
			}
			// While train-stage-1's gang holds the name, train's main Job must be held (looked at
			// every 200 ms, to time the gang's going closely).
			from := time.Now()
			for ; k.holderNow(ctx, c, ns, "train-stage-1") == "train-stage-1"; time.Sleep(200 * time.Millisecond) {
				if what, ok := held(ctx); !ok {
					t.Fatalf("train's Job train-main-0 is %s while %s train-stage-1 is JobSet train-stage-1's: its pods join that gang", what, k.name)
				}
			}
			if seen := time.Since(from); seen < 3*time.Second {
				t.Errorf("train's Job seen held for %v only: train-stage-1's gang went too soon to tell", seen.Round(100*time.Millisecond))
			}
			goesOnSoon(ctx, t, c, ns, "train-main-0")
			framework.WaitJobSet(ctx, t, c, other, jobsetv1alpha2.JobSetCompleted)
			waitCompleted(ctx, t, c, js)
			return ctx
		}))
	}
	testenv.Test(t, fs...)
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

// createdAtOnce: a composite JobSet train (ReplicatedJob stage, Jobs train-stage-0 and
// train-stage-1, each a PodGroup named as it) and a JobSet train-stage-1 (its PodGroup
// train-stage-1) created at the same moment, suspended (as Kueue queues them): both are
// admitted, as neither's gang is made yet (should one be refused, both are made again), and
// their Jobs created suspended. Whichever gang is made first keeps the name; the other JobSet
// is told (PodGroupNameTaken) and, once both are resumed, its Job of that gang is not resumed
// while the first one runs. Once that finished and its gang is gone, the other completes too.
func createdAtOnce(k gangKind) features.Feature {
	return framework.NamespacedFeature(k.name+": two JobSets created at once", "the later gang's Job is not resumed until the other gang is gone", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		c := framework.Client(t, cfg)
		ns := framework.NamespaceFrom(ctx)
		k.require(ctx, t, cfg, ns)
		var train, other *jobsetv1alpha2.JobSet
		for attempt := 1; ; attempt++ {
			// Suspended: JobSet creates their Jobs suspended at once, before either gang exists.
			train = k.jobSet(ns, "train").Suspend(true).ReplicatedJobs(replicated("stage", 2, 1, "15s")).Obj()
			other = newJobSet(ns, "train-stage-1", k.scheduler).Suspend(true).ReplicatedJobs(replicated("w", 1, 1, "15s")).Obj()
			errs := make(chan error, 2)
			for _, js := range []*jobsetv1alpha2.JobSet{train, other} {
				go func() { errs <- c.Create(ctx, js) }()
			}
			e1, e2 := <-errs, <-errs
			if e1 == nil && e2 == nil {
				t.Logf("both admitted at attempt %d", attempt)
				break
			}
			if attempt == 5 {
				t.Fatalf("not both admitted in %d attempts: %v; %v", attempt, e1, e2)
			}
			for _, js := range []*jobsetv1alpha2.JobSet{train, other} {
				_ = c.Delete(ctx, js, client.PropagationPolicy("Foreground"))
			}
			framework.Eventually(ctx, t, time.Minute, "both JobSets and the PodGroup gone", func(ctx context.Context) (bool, string, error) {
				return k.gone(ctx, c, ns, "train-stage-1") && apierrors.IsNotFound(c.Get(ctx, client.ObjectKeyFromObject(train), &jobsetv1alpha2.JobSet{})) &&
					apierrors.IsNotFound(c.Get(ctx, client.ObjectKeyFromObject(other), &jobsetv1alpha2.JobSet{})), "", nil
			})
		}
		first, late, heldJob := train, other, "train-stage-1-w-0"
		if k.holder(ctx, t, c, ns, "train-stage-1") == other.Name {
			first, late, heldJob = other, train, "train-stage-1"
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
		if !strings.Contains(msgs[0], "kubernetes PodGroup train-stage-1 exists and was made for JobSet "+first.Name+" ") {
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
