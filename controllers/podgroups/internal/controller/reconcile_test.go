package controller

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	schedulingv1alpha3 "k8s.io/api/scheduling/v1alpha3"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	coschedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"
	volcanov1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/jobset-addons/jobset-addons/controllers/podgroups/internal/backend"
	"github.com/jobset-addons/jobset-addons/pkg/addon"
	"github.com/jobset-addons/jobset-addons/pkg/addon/addontest"
	"github.com/jobset-addons/jobset-addons/pkg/addon/checks/podgroups"
	"github.com/jobset-addons/jobset-addons/pkg/addon/jobsets"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

var start = time.Unix(1000, 0)

// admitted is the JobSet as the mutating webhook leaves it: each pod template names its gang.
func admitted(t *testing.T, js *jobsetv1alpha2.JobSet) *jobsetv1alpha2.JobSet {
	t.Helper()
	s, gangs, errs := podgroups.Read(js)
	if all := errs.All(); len(all) > 0 {
		t.Fatal(all)
	}
	backend.Inject(registry.For(s.Scheduler), js, s, gangs)
	return js
}

// podGroup is what the reconciler made of the JobSet's gang g before its demand changed: ours,
// with minMember and a spec hash of another demand.
func podGroup(t *testing.T, js *jobsetv1alpha2.JobSet, stage int, minMember int32) client.Object {
	t.Helper()
	s, gangs, _ := podgroups.Read(js)
	g := gangs[stage]
	g.MinMember = minMember
	pg := registry.For(s.Scheduler).Build(js, g, s, "", "default")
	pg.SetUID(types.UID(pg.GetName() + "-uid"))
	return pg
}

// fakeCluster is a fake client holding objs, with the field indexes the reconciler lists by.
func fakeCluster(t *testing.T, installed map[contract.Scheduler]backend.Backend, composite schema.GroupVersionKind, objs ...client.Object) client.Client {
	t.Helper()
	return fakeBuilder(t, installed, composite, objs...).Build()
}

// fakeBuilder is fakeCluster's builder, for a test to add to.
func fakeBuilder(t *testing.T, installed map[contract.Scheduler]backend.Backend, composite schema.GroupVersionKind, objs ...client.Object) *fake.ClientBuilder {
	t.Helper()
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, jobsetv1alpha2.AddToScheme, volcanov1beta1.AddToScheme, coschedv1alpha1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	// The fake client reads metadata only of kinds its scheme knows: CompositePodGroup of
	// scheduling.k8s.io/v1beta1 (Kubernetes 1.38, not in the add-ons' k8s.io/api), the same fields
	// as v1alpha3's.
	beta := backend.CompositeKinds[0]
	scheme.AddKnownTypeWithName(beta, &schedulingv1alpha3.CompositePodGroup{})
	scheme.AddKnownTypeWithName(beta.GroupVersion().WithKind(beta.Kind+"List"), &schedulingv1alpha3.CompositePodGroupList{})
	b := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).WithStatusSubresource(&jobsetv1alpha2.JobSet{})
	for _, o := range indexed(installed, composite) {
		b = b.WithIndex(o, JobSetNameIndex, jobsets.IndexByName)
	}
	return b
}

// state is what a test reads back: the PodGroups' minMember (or gang minCount) by name, the
// Workloads and the CompositePodGroups.
type state struct {
	PodGroups  map[string]int32
	Workloads  []string
	Composites []string
}

func read(t *testing.T, c client.Client) state {
	t.Helper()
	ctx := context.Background()
	st := state{PodGroups: map[string]int32{}}
	var volcano volcanov1beta1.PodGroupList
	var native schedulingv1beta1.PodGroupList
	var workloads schedulingv1beta1.WorkloadList
	for _, l := range []client.ObjectList{&volcano, &native, &workloads} {
		if err := c.List(ctx, l); err != nil {
			t.Fatal(err)
		}
	}
	for _, pg := range volcano.Items {
		st.PodGroups[pg.Name] = pg.Spec.MinMember
	}
	for _, pg := range native.Items {
		st.PodGroups[pg.Name] = pg.Spec.SchedulingPolicy.Gang.MinCount
	}
	for _, wl := range workloads.Items {
		st.Workloads = append(st.Workloads, wl.Name)
	}
	for _, gvk := range backend.CompositeKinds {
		composites := &unstructured.UnstructuredList{}
		composites.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		if err := c.List(ctx, composites); err != nil {
			t.Fatal(err)
		}
		for _, cpg := range composites.Items {
			st.Composites = append(st.Composites, cpg.GetName()+" "+cpg.GetAPIVersion())
		}
	}
	return st
}

// TestReconcile runs Reconcile twice on a JobSet and what exists beside it, and reads back the
// PodGroups and Workloads and every Event: the second run must change nothing and tell nothing.
func TestReconcile(t *testing.T) {
	volcano := map[string]string{contract.SchedulerAnnotationKey: "volcano"}
	sequenced := map[string]string{contract.SchedulerAnnotationKey: "volcano", contract.ExecutionPolicyAnnotationKey: "InOrder"}
	native := map[string]string{contract.SchedulerAnnotationKey: "kubernetes"}
	all := installedAll()
	cases := map[string]struct {
		js         func(t *testing.T) *jobsetv1alpha2.JobSet
		objs       func(t *testing.T, js *jobsetv1alpha2.JobSet) []client.Object
		installed  []contract.Scheduler    // all when empty
		composite  schema.GroupVersionKind // the CompositePodGroup served (none: zero)
		want       state
		wantEvents []string
	}{
		"volcano: one gang, made": {
			js:         func(t *testing.T) *jobsetv1alpha2.JobSet { return admitted(t, twoStages(volcano, false).Obj()) },
			want:       state{PodGroups: map[string]int32{"js": 4}},
			wantEvents: []string{"Normal PodGroupCreated Created volcano PodGroup js: minMember 4, minResources none"},
		},
		"volcano, sequenced: the first stage only, until the second is released": {
			js:         func(t *testing.T) *jobsetv1alpha2.JobSet { return admitted(t, twoStages(sequenced, false).Obj()) },
			want:       state{PodGroups: map[string]int32{"js-stage-0": 2}},
			wantEvents: []string{"Normal PodGroupCreated Created volcano PodGroup js-stage-0: minMember 2, minResources none"},
		},
		"volcano: the demand changed, the PodGroup follows": {
			js: func(t *testing.T) *jobsetv1alpha2.JobSet { return admitted(t, twoStages(volcano, false).Obj()) },
			objs: func(t *testing.T, js *jobsetv1alpha2.JobSet) []client.Object {
				return []client.Object{podGroup(t, js, 0, 9)}
			},
			want:       state{PodGroups: map[string]int32{"js": 4}},
			wantEvents: []string{"Normal PodGroupUpdated Updated volcano PodGroup js to the JobSet's demand: minMember 4, minResources none"},
		},
		"volcano: finished, the PodGroup deleted": {
			js: func(t *testing.T) *jobsetv1alpha2.JobSet {
				return admitted(t, twoStages(volcano, false).Condition(jobsetv1alpha2.JobSetCompleted).Obj())
			},
			objs: func(t *testing.T, js *jobsetv1alpha2.JobSet) []client.Object {
				return []client.Object{podGroup(t, js, 0, 4)}
			},
			want:       state{PodGroups: map[string]int32{}},
			wantEvents: []string{"Normal PodGroupDeleted Deleted volcano PodGroup js: the JobSet finished"},
		},
		"volcano: a PodGroup of the name that is not ours is left alone": {
			js: func(t *testing.T) *jobsetv1alpha2.JobSet { return admitted(t, twoStages(volcano, false).Obj()) },
			objs: func(*testing.T, *jobsetv1alpha2.JobSet) []client.Object {
				return []client.Object{&volcanov1beta1.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "js"}, Spec: volcanov1beta1.PodGroupSpec{MinMember: 1}}}
			},
			want: state{PodGroups: map[string]int32{"js": 1}},
			wantEvents: []string{"Warning PodGroupNameTaken PodGroup js exists and is not one podgroups made for this JobSet: " +
				"it is left alone, and the pods that name it are scheduled against it"},
		},
		"kubernetes: the Workload, then the PodGroup": {
			js:   func(t *testing.T) *jobsetv1alpha2.JobSet { return admitted(t, twoStages(native, false).Obj()) },
			want: state{PodGroups: map[string]int32{"js": 4}, Workloads: []string{"js"}},
			wantEvents: []string{
				"Normal WorkloadCreated Created Workload js: 1 PodGroup templates, one per gang",
				"Normal PodGroupCreated Created kubernetes PodGroup js: gang minCount 4",
			},
		},
		"kubernetes: finished, the PodGroup deleted, then the Workload": {
			js: func(t *testing.T) *jobsetv1alpha2.JobSet {
				return admitted(t, twoStages(native, false).Condition(jobsetv1alpha2.JobSetCompleted).Obj())
			},
			objs: func(t *testing.T, js *jobsetv1alpha2.JobSet) []client.Object {
				s, gangs, _ := podgroups.Read(js)
				wl, err := backend.Kubernetes{}.BuildWorkload(js, gangs, s, func(podgroups.Gang) string { return "" })
				if err != nil {
					t.Fatal(err)
				}
				wl.UID = "workload-uid"
				return []client.Object{podGroup(t, js, 0, 4), wl}
			},
			want: state{PodGroups: map[string]int32{}},
			wantEvents: []string{
				"Normal PodGroupDeleted Deleted kubernetes PodGroup js: the JobSet finished",
				"Normal WorkloadDeleted Deleted Workload js: the JobSet finished",
			},
		},
		"kubernetes, composite, CompositePodGroup not served: nothing made, told once": {
			js: func(t *testing.T) *jobsetv1alpha2.JobSet {
				return admitted(t, twoStages(map[string]string{contract.SchedulerAnnotationKey: "kubernetes", contract.CompositeAnnotationKey: "true"}, false).Obj())
			},
			want: state{PodGroups: map[string]int32{}},
			wantEvents: []string{"Warning SchedulerNotInstalled No PodGroup is made: the JobSet asks for a composite gang and CompositePodGroup (scheduling.k8s.io/v1beta1 or v1alpha3) " +
				"was not served when the podgroups controller started; turn it on and restart the controller"},
		},
		"not admitted: nothing made, told once": {
			js:   func(*testing.T) *jobsetv1alpha2.JobSet { return twoStages(volcano, false).Obj() },
			want: state{PodGroups: map[string]int32{}},
			wantEvents: []string{"Warning NotAdmitted The JobSet was created while the podgroups webhook was not running: " +
				"its pods name no PodGroup and are not gang-scheduled; re-create the JobSet"},
		},
		"kubernetes, not admitted (or its JobSet CRD pruned spec.schedulingGroup): nothing made, told once": {
			js: func(*testing.T) *jobsetv1alpha2.JobSet {
				return twoStages(map[string]string{contract.SchedulerAnnotationKey: "kubernetes"}, false).Obj()
			},
			want: state{PodGroups: map[string]int32{}},
			wantEvents: []string{"Warning NotAdmitted The JobSet was created while the podgroups webhook was not running, or this cluster's JobSet CRD dropped spec.schedulingGroup, " +
				"where the webhook names the gang (JobSet before v0.12.0: the kubernetes scheduler needs JobSet v0.12.0 or later): its pods name no PodGroup and are not gang-scheduled; re-create the JobSet"},
		},
		"scheduler not installed: nothing made, told once": {
			js:        func(t *testing.T) *jobsetv1alpha2.JobSet { return admitted(t, twoStages(volcano, false).Obj()) },
			installed: []contract.Scheduler{contract.SchedulerKubernetes},
			want:      state{PodGroups: map[string]int32{}},
			wantEvents: []string{"Warning SchedulerNotInstalled No PodGroup is made: the volcano PodGroup CRD (scheduling.volcano.sh/v1beta1) " +
				"was not served when the podgroups controller started; install it and restart the controller"},
		},
		"invalid settings: nothing made, told once": {
			js: func(*testing.T) *jobsetv1alpha2.JobSet {
				return twoStages(map[string]string{contract.SchedulerAnnotationKey: "volcano", contract.ScheduleTimeoutAnnotationKey: "9"}, false).Obj()
			},
			want: state{PodGroups: map[string]int32{}},
			wantEvents: []string{"Warning InvalidPodGroupSettings No PodGroup is made: " +
				`metadata.annotations[podgroups.jobset-addons.io/schedule-timeout-seconds]: Forbidden: applies only to scheduler "coscheduling", not "volcano"`},
		},
	}
	// A composite gang, at each version of CompositePodGroup: v1alpha3 (Kubernetes 1.37), v1beta1 (1.38).
	for _, gvk := range backend.CompositeKinds {
		cases["kubernetes, composite, "+gvk.Version+": the Workload, the CompositePodGroup, a PodGroup per Job"] = struct {
			js         func(t *testing.T) *jobsetv1alpha2.JobSet
			objs       func(t *testing.T, js *jobsetv1alpha2.JobSet) []client.Object
			installed  []contract.Scheduler
			composite  schema.GroupVersionKind
			want       state
			wantEvents []string
		}{
			js: func(t *testing.T) *jobsetv1alpha2.JobSet {
				return admitted(t, twoStages(map[string]string{contract.SchedulerAnnotationKey: "kubernetes", contract.CompositeAnnotationKey: "true"}, false).Obj())
			},
			composite: gvk,
			want:      state{PodGroups: map[string]int32{"js-init-0": 1, "js-init-1": 1, "js-main-0": 1, "js-main-1": 1}, Workloads: []string{"js"}, Composites: []string{"js " + gvk.GroupVersion().String()}},
			wantEvents: []string{
				"Normal WorkloadCreated Created Workload js: 1 PodGroup templates, one per gang",
				"Normal CompositePodGroupCreated Created CompositePodGroup js: all of its 4 Jobs or none, each Job a PodGroup of its own",
				"Normal PodGroupCreated Created kubernetes PodGroup js-init-0: gang minCount 1",
				"Normal PodGroupCreated Created kubernetes PodGroup js-init-1: gang minCount 1",
				"Normal PodGroupCreated Created kubernetes PodGroup js-main-0: gang minCount 1",
				"Normal PodGroupCreated Created kubernetes PodGroup js-main-1: gang minCount 1",
			},
		}
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			installed := all
			if tc.installed != nil {
				installed = map[contract.Scheduler]backend.Backend{}
				for _, s := range tc.installed {
					installed[s] = all[s]
				}
			}
			js := tc.js(t)
			objs := []client.Object{js}
			if tc.objs != nil {
				objs = append(objs, tc.objs(t, js)...)
			}
			c := fakeCluster(t, installed, tc.composite, objs...)
			rec := events.NewFakeRecorder(100)
			clock := clocktesting.NewFakeClock(start)
			r := &Reconciler{Client: c, APIReader: c, Backends: registry, Recorder: rec, Clock: clock, Installed: installed, DefaultQueue: "default", CompositeKind: tc.composite,
				deleted: &addon.Changed{TTL: addon.MadeTTL, Clock: clock}}
			for range 2 {
				if _, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "js"}}); err != nil {
					t.Fatal(err)
				}
			}
			if diff := cmp.Diff(tc.want, read(t, c)); diff != "" {
				t.Errorf("objects (-want +got):\n%s", diff)
			}
			close(rec.Events)
			var got []string
			for e := range rec.Events {
				got = append(got, e)
			}
			if diff := cmp.Diff(tc.wantEvents, got); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}

// TestNamespaceTerminating: a create the API server refuses because the JobSet's namespace is
// being deleted is not a failure: the reconcile returns no error (no retry), tells nothing, and
// makes nothing after it (the kubernetes backend's PodGroup is not tried once its Workload was
// refused so). Each reconcile tries again, once: an event of the namespace's deletion brings it.
func TestNamespaceTerminating(t *testing.T) {
	all := installedAll()
	for _, scheduler := range []string{"volcano", "kubernetes"} {
		t.Run(scheduler, func(t *testing.T) {
			js := admitted(t, twoStages(map[string]string{contract.SchedulerAnnotationKey: scheduler}, false).Obj())
			var tried []string
			c := fakeBuilder(t, all, schema.GroupVersionKind{}, js).WithInterceptorFuncs(interceptor.Funcs{
				Create: addontest.NamespaceTerminatingCreate(func(obj client.Object) { tried = append(tried, fmt.Sprintf("%T", obj)) }),
			}).Build()
			rec := events.NewFakeRecorder(100)
			clock := clocktesting.NewFakeClock(start)
			r := &Reconciler{Client: c, APIReader: c, Backends: registry, Recorder: rec, Clock: clock, Installed: all, DefaultQueue: "default",
				deleted: &addon.Changed{TTL: addon.MadeTTL, Clock: clock}}
			for i := range 2 {
				res, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "js"}})
				if err != nil || !res.IsZero() {
					t.Fatalf("reconcile %d: %+v, %v; want nothing to retry", i, res, err)
				}
			}
			first := map[string]string{"volcano": "*v1beta1.PodGroup", "kubernetes": "*v1beta1.Workload"}[scheduler]
			if diff := cmp.Diff([]string{first, first}, tried); diff != "" {
				t.Errorf("creates tried (-want +got):\n%s", diff)
			}
			close(rec.Events)
			for e := range rec.Events {
				t.Errorf("event %q, want none", e)
			}
		})
	}
}

// TestGoing: an object this process deleted is "going" until the cache shows it changed (its
// deletion) or addon.MadeTTL has passed, so that a PodGroup a finalizer holds is deleted, and
// told, once; one with a deletionTimestamp is going whoever deleted it.
func TestGoing(t *testing.T) {
	clock := clocktesting.NewFakeClock(start)
	r := &Reconciler{Clock: clock, deleted: &addon.Changed{TTL: addon.MadeTTL, Clock: clock}}
	pg := &schedulingv1beta1.PodGroup{ObjectMeta: metav1.ObjectMeta{UID: "one", ResourceVersion: "1"}}
	if r.going(pg) || r.going(nil) {
		t.Fatal("going before any deletion")
	}
	r.deleted.Wrote(pg)
	if !r.going(pg) {
		t.Error("not going right after its deletion")
	}
	if r.going(&schedulingv1beta1.PodGroup{ObjectMeta: metav1.ObjectMeta{UID: "other", ResourceVersion: "1"}}) {
		t.Error("another UID of the name is going")
	}
	clock.Step(addon.MadeTTL)
	if r.going(pg) {
		t.Error("still going after MadeTTL")
	}
	pg.DeletionTimestamp = &metav1.Time{Time: start}
	if !r.going(pg) {
		t.Error("not going with a deletionTimestamp")
	}
}

// registry is every backend, under their default names.
var registry = backend.NewRegistry(backend.Names{})

// installedAll is every backend, installed.
func installedAll() map[contract.Scheduler]backend.Backend {
	all := map[contract.Scheduler]backend.Backend{}
	for _, b := range registry.All() {
		all[b.Scheduler()] = b
	}
	return all
}
