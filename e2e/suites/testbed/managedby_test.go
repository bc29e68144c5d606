package testbed_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/jobset-addons/jobset-addons/e2e/framework"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// reasonManagedElsewhere is the reason of the one Event about a JobSet managed elsewhere
// (pkg/addon's ReasonManagedElsewhere).
const reasonManagedElsewhere = "ManagedElsewhere"

// made are the kinds the add-ons make for a JobSet, each labelled with its JobSet's name.
var made = []schema.GroupVersionResource{
	{Version: "v1", Resource: "persistentvolumeclaims"},
	{Group: "resource.k8s.io", Version: "v1", Resource: "resourceclaims"},
	{Group: "scheduling.k8s.io", Version: "v1beta1", Resource: "podgroups"},
	{Group: "scheduling.k8s.io", Version: "v1beta1", Resource: "workloads"},
}

// TestManagedElsewhere: a JobSet that uses all four add-ons and whose spec.managedBy names
// another controller (MultiKueue's manager cluster keeps such copies) gets nothing from them,
// watched from before its creation: no PVC, ResourceClaim, PodGroup or Workload, no release
// annotation, its pod templates as the user wrote them; one Normal ManagedElsewhere Event says
// why; a bad annotation on such a JobSet is still refused. The same JobSet without
// spec.managedBy, created beside it, gets all of them (the control).
func TestManagedElsewhere(t *testing.T) {
	tb, err := framework.DefaultConfig()
	if err != nil {
		t.Fatal(err)
	}
	f := features.New("a JobSet managed elsewhere gets nothing from the add-ons, and one Event saying why").
		WithSetup("namespace", framework.Namespace).
		WithSetup("the four add-ons", startAddons(tb)).
		Assess("nothing for it, all for the control", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			ns := framework.NamespaceFrom(ctx)
			c := framework.Client(t, cfg)
			dc, err := dynamic.NewForConfig(cfg.Client().RESTConfig())
			if err != nil {
				t.Fatal(err)
			}
			w := watchMade(ctx, t, dc, ns)
			defer w.stop()

			elsewhere := framework.AllAddonsJobSet(ns, "elsewhere")
			elsewhere.Spec.ManagedBy = ptr.To("kueue.x-k8s.io/multikueue")
			bad := framework.AllAddonsJobSet(ns, "elsewhere-bad")
			bad.Spec.ManagedBy = elsewhere.Spec.ManagedBy
			bad.Annotations[contract.PoliciesAnnotationKey] = "[]"
			if err := c.Create(ctx, bad); err == nil {
				t.Errorf("a JobSet managed elsewhere with an empty %s was admitted: validation must still refuse it", contract.PoliciesAnnotationKey)
			}
			here := framework.AllAddonsJobSet(ns, "here")
			framework.CreateAll(ctx, t, c, elsewhere, here)

			// The control gets everything: its PVCs, its claim, its gangs, and its second stage
			// released once the first completes.
			framework.Eventually(ctx, t, 2*time.Minute, "the control's objects and release", func(ctx context.Context) (bool, string, error) {
				got := w.seen("here")
				var js jobsetv1alpha2.JobSet
				if err := c.Get(ctx, client.ObjectKeyFromObject(here), &js); err != nil {
					return false, err.Error(), nil
				}
				released := js.Annotations[contract.ReleasedAnnotationKey]
				done := got["persistentvolumeclaims"] == 2 && got["resourceclaims"] == 1 && got["workloads"] == 1 && got["podgroups"] >= 1 && released != ""
				return done, fmt.Sprintf("made %v, released %q", got, released), nil
			})
			// Several seconds more of watching: the JobSet managed elsewhere must still have
			// nothing, the control having had all of its objects for a while.
			time.Sleep(5 * time.Second)
			if got := w.seen("elsewhere"); len(got) > 0 {
				t.Errorf("objects made for the JobSet managed elsewhere, over the whole test: %v", got)
			}
			var js jobsetv1alpha2.JobSet
			if err := c.Get(ctx, client.ObjectKeyFromObject(elsewhere), &js); err != nil {
				t.Fatal(err)
			}
			for key := range js.Annotations {
				if key == contract.ReleasedAnnotationKey || key == contract.VolumeClaimsAdmittedAnnotationKey {
					t.Errorf("the JobSet managed elsewhere has the add-ons' annotation %s", key)
				}
			}
			for _, rj := range js.Spec.ReplicatedJobs {
				pod := rj.Template.Spec.Template
				if len(pod.Spec.SchedulingGates) > 0 || len(pod.Spec.Volumes) > 0 || pod.Spec.SchedulingGroup != nil {
					t.Errorf("the mutating webhooks changed the pod template of %s: gates %v, volumes %v, scheduling group %v",
						rj.Name, pod.Spec.SchedulingGates, pod.Spec.Volumes, pod.Spec.SchedulingGroup)
				}
			}
			framework.WaitEventCounts(ctx, t, c, &js, map[string]int{reasonManagedElsewhere: 1})
			notes, err := framework.EventMessages(ctx, c, &js, reasonManagedElsewhere)
			if err != nil || len(notes) != 1 || !strings.HasPrefix(notes[0], "spec.managedBy is kueue.x-k8s.io/multikueue, not JobSet's own controller") {
				t.Errorf("the ManagedElsewhere Event: %q (%v)", notes, err)
			}
			if reasons, err := framework.EventReasons(ctx, c, &js); err != nil || len(reasons) != 1 {
				t.Errorf("Events about the JobSet managed elsewhere: %v (%v), want the one ManagedElsewhere", reasons, err)
			}
			return ctx
		}).
		Teardown(stopAddons(tb)).
		Teardown(framework.DeleteNamespace).
		Feature()
	testenv.Test(t, f)
}

// startAddons is a feature step that starts the four add-ons on the testbed (none where they are
// installed in the cluster); stopAddons stops them.
func startAddons(tb framework.Config) features.Func {
	return func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
		if framework.Installed() {
			return ctx
		}
		for _, a := range framework.Addons {
			if err := framework.StartAddon(ctx, tb, a, nil, "--log-level=2"); err != nil {
				t.Fatalf("starting %s: %v", a, err)
			}
		}
		return ctx
	}
}

func stopAddons(tb framework.Config) features.Func {
	return func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
		if framework.Installed() {
			return ctx
		}
		for _, a := range framework.Addons {
			if err := framework.StopAddon(ctx, tb, a); err != nil {
				t.Errorf("stopping %s: %v", a, err)
			}
		}
		return ctx
	}
}

// madeWatch counts, from watches started before the JobSets exist, every object of the made
// kinds that appeared for each JobSet (by its jobset-name label), by resource.
type madeWatch struct {
	mu     sync.Mutex
	byName map[string]map[string]int
	cancel context.CancelFunc
	done   sync.WaitGroup
}

func watchMade(ctx context.Context, t *testing.T, dc dynamic.Interface, ns string) *madeWatch {
	t.Helper()
	ctx, cancel := context.WithCancel(ctx)
	w := &madeWatch{byName: map[string]map[string]int{}, cancel: cancel}
	for _, gvr := range made {
		wi, err := dc.Resource(gvr).Namespace(ns).Watch(ctx, metav1.ListOptions{LabelSelector: contract.JobSetNameLabelKey})
		if err != nil {
			cancel()
			t.Fatalf("watching %s: %v", gvr.Resource, err)
		}
		w.done.Add(1)
		go func() {
			defer w.done.Done()
			defer wi.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case ev, ok := <-wi.ResultChan():
					if !ok {
						return
					}
					o, isObj := ev.Object.(metav1.Object)
					if !isObj || ev.Type != "ADDED" {
						continue
					}
					name := o.GetLabels()[contract.JobSetNameLabelKey]
					w.mu.Lock()
					if w.byName[name] == nil {
						w.byName[name] = map[string]int{}
					}
					w.byName[name][gvr.Resource]++
					w.mu.Unlock()
				}
			}
		}()
	}
	return w
}

// seen is how many objects of each resource appeared for the JobSet name.
func (w *madeWatch) seen(name string) map[string]int {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := map[string]int{}
	for r, n := range w.byName[name] {
		out[r] = n
	}
	return out
}

func (w *madeWatch) stop() {
	w.cancel()
	w.done.Wait()
}
