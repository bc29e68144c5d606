package webhook

import (
	"context"
	"errors"
	"strings"
	"testing"

	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	volcanov1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/jobset-addons/jobset-addons/controllers/podgroups/internal/backend"
	"github.com/jobset-addons/jobset-addons/pkg/addon/addontest"
	"github.com/jobset-addons/jobset-addons/pkg/addon/checks/podgroups"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// TestJobWebhookMakesItsGang: a Job that comes before its gang object has the webhook make it
// for its JobSet, as the reconciler builds it (so that no JobSet of a colliding name makes it
// first): the JobSet's one gang, a stage not gated, a gated stage once released, the Workload
// before the PodGroup. Nothing is made on a dry run, for a gated stage not released, or for a
// Job whose JobSet is not its controller; a create the API server refuses holds the Job,
// naming the object.
func TestJobWebhookMakesItsGang(t *testing.T) {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{jobsetv1alpha2.AddToScheme, volcanov1beta1.AddToScheme, schedulingv1beta1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	inOrder := []string{schedulerKey, "volcano", contract.ExecutionPolicyAnnotationKey, "InOrder"}
	twoStages := func(annotations ...string) *jobsetv1alpha2.JobSet {
		return addontest.JobSet("ns", "train").UID("uid-mine").Annotate(annotations...).
			ReplicatedJobs(addontest.ReplicatedJob("init"), addontest.ReplicatedJob("main").Replicas(2)).Obj()
	}
	released := contract.Released{ReplicatedJobs: []string{"main"}}.String()
	refused := interceptor.Funcs{Create: func(context.Context, client.WithWatch, client.Object, ...client.CreateOption) error {
		return apierrors.NewForbidden(schema.GroupResource{Resource: "podgroups"}, "train", errors.New("exceeded quota"))
	}}
	cases := map[string]struct {
		js         *jobsetv1alpha2.JobSet
		rj         string
		dryRun     bool
		foreign    bool // the Job's controller is not its JobSet
		index      int
		objs       []client.Object // on the server before the Job
		refuse     bool
		want       []string // kind/name of the objects made, in order
		wantDenied string
	}{
		"the JobSet's one gang":             {js: twoStages(schedulerKey, "volcano"), rj: "main", want: []string{"PodGroup/train"}},
		"stage 0":                           {js: twoStages(inOrder...), rj: "init", want: []string{"PodGroup/train-stage-0"}},
		"a gated stage not released":        {js: twoStages(inOrder...), rj: "main"},
		"a gated stage released":            {js: twoStages(append(inOrder, contract.ReleasedAnnotationKey, released)...), rj: "main", want: []string{"PodGroup/train-stage-1"}},
		"a dry run":                         {js: twoStages(schedulerKey, "volcano"), rj: "main", dryRun: true},
		"a Job its JobSet does not control": {js: twoStages(schedulerKey, "volcano"), rj: "main", foreign: true},
		"an index the JobSet does not have": {js: twoStages(schedulerKey, "volcano"), rj: "main", index: 2},
		"the Workload first":                {js: twoStages(schedulerKey, "kubernetes"), rj: "main", want: []string{"Workload/train", "PodGroup/train"}},
		"a user's Workload of the name: nothing made below it": {js: twoStages(schedulerKey, "kubernetes"), rj: "main", objs: []client.Object{
			&schedulingv1beta1.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "train"}}}, want: []string{"Workload/train"}},
		"refused (a quota)": {js: twoStages(schedulerKey, "volcano"), rj: "main", refuse: true,
			wantDenied: "the volcano PodGroup train does not exist yet and cannot be made: podgroups \"train\" is forbidden: exceeded quota"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			w := hook(contract.SchedulerVolcano, contract.SchedulerKubernetes)
			if err := w.Default(request("CREATE"), tc.js); err != nil {
				t.Fatal(err)
			}
			job := addontest.Job(tc.js, tc.rj, tc.index).ControlledBy(tc.js).Obj()
			if tc.foreign {
				job.OwnerReferences = nil
			}
			b := fake.NewClientBuilder().WithScheme(scheme).WithObjects(append(tc.objs, tc.js)...)
			if tc.refuse {
				b = b.WithInterceptorFuncs(refused)
			}
			c := b.Build()
			jw := &JobWebhook{Reader: c, APIReader: c, Client: c, Backends: w.Backends, Installed: w.Installed, Classes: w.Classes, DefaultQueue: "default"}
			req := jobCreate(t, job)
			req.DryRun = ptr.To(tc.dryRun)
			resp := jw.Handle(context.Background(), req)
			if tc.wantDenied != "" {
				if resp.Allowed || !strings.Contains(resp.Result.Message, tc.wantDenied) {
					t.Fatalf("%+v, want denied: %s", resp.Result, tc.wantDenied)
				}
				return
			}
			if !resp.Allowed {
				t.Fatalf("%+v, want allowed", resp.Result)
			}
			var got []string
			for _, gvk := range []schema.GroupVersionKind{schedulingv1beta1.SchemeGroupVersion.WithKind("Workload"), schedulingv1beta1.SchemeGroupVersion.WithKind("PodGroup"), volcanov1beta1.SchemeGroupVersion.WithKind("PodGroup")} {
				list := backend.MetaList(gvk)
				if err := c.List(context.Background(), list); err != nil {
					t.Fatal(err)
				}
				for _, o := range list.Items {
					if !backend.Ours(&o, tc.js) && len(o.Labels) > 0 { // a user's, there before, is left as it was
						t.Errorf("%s %s is not the JobSet's: labels %v, owners %v", gvk.Kind, o.Name, o.Labels, o.OwnerReferences)
					}
					got = append(got, gvk.Kind+"/"+o.Name)
				}
			}
			if strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Errorf("made %v, want %v", got, tc.want)
			}
			// What was made is what the reconciler builds: the same spec hash.
			s, gangs, _ := podgroups.Read(tc.js)
			for _, o := range backend.JobObjects(w.Backends.For(s.Scheduler), tc.js, gangs, tc.rj, job.Name, schema.GroupVersionKind{}) {
				have := backend.Meta(o.Kind)
				if err := c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: o.Name}, have); err != nil || len(have.Labels) == 0 {
					continue // not made, or a user's
				}
				want, err := o.Build(w.Backends.For(s.Scheduler), tc.js, s, gangs, func(g podgroups.Gang) string { pc, _ := g.PriorityClass(w.Classes); return pc }, "default")
				if err != nil || have.Annotations[contract.PodGroupSpecHashAnnotationKey] != want.GetAnnotations()[contract.PodGroupSpecHashAnnotationKey] {
					t.Errorf("%s: hash %s, want the reconciler's %v (%v)", o.What, have.Annotations[contract.PodGroupSpecHashAnnotationKey], want.GetAnnotations(), err)
				}
			}
		})
	}
}

// TestValidateTakenByJobSets: JobSet train (sequenced, Volcano) has not finished; its gated
// stage 1's gang train-stage-1 is not made yet. JobSet train-stage-1 (Volcano) would make a
// gang of that name first: it is refused at the scheduler annotation, naming JobSet train. It
// is admitted once train finished, and beside a coscheduling train (another kind of object).
func TestValidateTakenByJobSets(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := jobsetv1alpha2.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	w := hook(contract.SchedulerVolcano, contract.SchedulerCoscheduling)
	train := func(scheduler string, finished bool) *jobsetv1alpha2.JobSet {
		js := addontest.JobSet("ns", "train").UID("uid-train").Annotate(schedulerKey, scheduler, contract.ExecutionPolicyAnnotationKey, "InOrder").
			ReplicatedJobs(addontest.ReplicatedJob("init"), addontest.ReplicatedJob("main")).Obj()
		if finished {
			js.Status.Conditions = []metav1.Condition{{Type: string(jobsetv1alpha2.JobSetCompleted), Status: metav1.ConditionTrue}}
		}
		return js
	}
	other := addontest.JobSet("ns", "train-stage-1").Annotate(schedulerKey, "volcano").ReplicatedJobs(addontest.ReplicatedJob("w")).Obj()
	for name, tc := range map[string]struct {
		train   *jobsetv1alpha2.JobSet
		refused bool
	}{
		"train has not finished":     {train: train("volcano", false), refused: true},
		"train finished":             {train: train("volcano", true)},
		"train's gangs coscheduling": {train: train("coscheduling", false)},
	} {
		w.Reader = fake.NewClientBuilder().WithScheme(scheme).WithObjects(tc.train).
			WithIndex(&jobsetv1alpha2.JobSet{}, backend.GangIndex, backend.GangKeys(w.Backends, schema.GroupVersionKind{})).Build()
		_, errs := w.Validate(context.Background(), other)
		switch {
		case tc.refused && (len(errs) != 1 || errs[0].Field != schedulerPath ||
			!strings.Contains(errs[0].Detail, "the volcano PodGroup train-stage-1 would also be a gang of JobSet train, which has not finished")):
			t.Errorf("%s: errors %v, want one at the scheduler annotation naming the PodGroup and JobSet train", name, errs)
		case !tc.refused && len(errs) > 0:
			t.Errorf("%s: errors %v, want none", name, errs)
		}
	}
}
