package multicluster_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"

	"github.com/jobset-addons/jobset-addons/e2e/framework"
	"github.com/jobset-addons/jobset-addons/pkg/contract"
)

// recorded are the kinds a recorder watches: the JobSets, what JobSet makes for them, and what
// the add-ons make (by the short names the report uses).
var recorded = []struct {
	name string
	gvr  schema.GroupVersionResource
}{
	{"jobsets", schema.GroupVersionResource{Group: "jobset.x-k8s.io", Version: "v1alpha2", Resource: "jobsets"}},
	{"jobs", schema.GroupVersionResource{Group: "batch", Version: "v1", Resource: "jobs"}},
	{"pods", schema.GroupVersionResource{Version: "v1", Resource: "pods"}},
	{"pvcs", schema.GroupVersionResource{Version: "v1", Resource: "persistentvolumeclaims"}},
	{"claims", schema.GroupVersionResource{Group: "resource.k8s.io", Version: "v1", Resource: "resourceclaims"}},
	{"podgroups", schema.GroupVersionResource{Group: "scheduling.k8s.io", Version: "v1beta1", Resource: "podgroups"}},
	{"workloads", schema.GroupVersionResource{Group: "scheduling.k8s.io", Version: "v1beta1", Resource: "workloads"}},
}

// addonKinds are the kinds only the add-ons make (and JobSet's Jobs and pods: none in the
// manager either).
var addonKinds = []string{"jobs", "pods", "pvcs", "claims", "podgroups", "workloads"}

// change is one line of a recorder's timeline: at, the live count of kind for a JobSet after an
// event, or, for kind "status", the JobSet's status as its copy in this cluster showed it.
type change struct {
	at     time.Duration
	jobSet string
	kind   string
	count  int
	status string
}

// recorder watches one cluster's namespace, from before the JobSets exist to the end of the
// test, and keeps for each JobSet (by name; others by the JobSet-name label) and kind the live
// objects, the most ever live, how many ever appeared, a timeline of the counts, and per pod the
// first moments it was seen bound and succeeded.
type recorder struct {
	cluster string
	start   time.Time

	mu       sync.Mutex
	live     map[string]map[string]map[string]bool // jobSet -> kind -> names
	most     map[string]map[string]int
	appeared map[string]map[string]int
	timeline []change
	status   map[string]string
	bound    map[string]time.Duration // pod name -> first seen bound
	done     map[string]time.Duration // pod name -> first seen Succeeded

	cancel context.CancelFunc
	wg     sync.WaitGroup
}

func record(ctx context.Context, t *testing.T, tb framework.Config, cluster, ns string, start time.Time) *recorder {
	t.Helper()
	rc, err := tb.RESTConfig()
	if err != nil {
		t.Fatal(err)
	}
	dc, err := dynamic.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(ctx)
	r := &recorder{cluster: cluster, start: start, cancel: cancel,
		live: map[string]map[string]map[string]bool{}, most: map[string]map[string]int{}, appeared: map[string]map[string]int{},
		status: map[string]string{}, bound: map[string]time.Duration{}, done: map[string]time.Duration{}}
	for _, k := range recorded {
		w, err := dc.Resource(k.gvr).Namespace(ns).Watch(ctx, metav1.ListOptions{})
		if err != nil {
			cancel()
			t.Fatalf("%s: watching %s: %v", cluster, k.name, err)
		}
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			defer w.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case ev, ok := <-w.ResultChan():
					if !ok {
						return
					}
					if u, isU := ev.Object.(*unstructured.Unstructured); isU {
						r.seen(k.name, ev.Type, u)
					}
				}
			}
		}()
	}
	return r
}

func (r *recorder) seen(kind string, typ watch.EventType, u *unstructured.Unstructured) {
	at := time.Since(r.start)
	js := u.GetLabels()[contract.JobSetNameLabelKey]
	if kind == "jobsets" {
		js = u.GetName()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.live[js] == nil {
		r.live[js], r.most[js], r.appeared[js] = map[string]map[string]bool{}, map[string]int{}, map[string]int{}
	}
	names := r.live[js][kind]
	if names == nil {
		names = map[string]bool{}
		r.live[js][kind] = names
	}
	before := len(names)
	switch typ {
	case watch.Added, watch.Modified:
		if !names[u.GetName()] {
			r.appeared[js][kind]++
		}
		names[u.GetName()] = true
	case watch.Deleted:
		delete(names, u.GetName())
	}
	if n := len(names); n != before {
		r.most[js][kind] = max(r.most[js][kind], n)
		r.timeline = append(r.timeline, change{at: at, jobSet: js, kind: kind, count: n})
	}
	switch kind {
	case "jobsets":
		if s := jobSetStatus(u); typ != watch.Deleted && s != r.status[js] {
			r.status[js] = s
			r.timeline = append(r.timeline, change{at: at, jobSet: js, kind: "status", status: s})
		}
	case "pods":
		if node, _, _ := unstructured.NestedString(u.Object, "spec", "nodeName"); node != "" {
			if _, ok := r.bound[u.GetName()]; !ok {
				r.bound[u.GetName()] = at
			}
		}
		if phase, _, _ := unstructured.NestedString(u.Object, "status", "phase"); phase == "Succeeded" {
			if _, ok := r.done[u.GetName()]; !ok {
				r.done[u.GetName()] = at
			}
		}
	}
}

// jobSetStatus is a JobSet's status in a line: each ReplicatedJob's active, ready and succeeded
// Jobs, and its true conditions.
func jobSetStatus(u *unstructured.Unstructured) string {
	var parts []string
	rjs, _, _ := unstructured.NestedSlice(u.Object, "status", "replicatedJobsStatus")
	for _, x := range rjs {
		m, _ := x.(map[string]any)
		parts = append(parts, fmt.Sprintf("%v: active %v ready %v succeeded %v", m["name"], num(m["active"]), num(m["ready"]), num(m["succeeded"])))
	}
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, x := range conds {
		m, _ := x.(map[string]any)
		if m["status"] == "True" {
			parts = append(parts, fmt.Sprint(m["type"]))
		}
	}
	if len(parts) == 0 {
		return "(no status)"
	}
	return strings.Join(parts, "; ")
}

func num(v any) any {
	if v == nil {
		return 0
	}
	return v
}

// stop ends the watches.
func (r *recorder) stop() {
	r.cancel()
	r.wg.Wait()
}

// mostOf is the most objects of kind ever live at once for the JobSet js.
func (r *recorder) mostOf(js, kind string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.most[js][kind]
}

// appearedOf is how many objects of kind ever appeared for the JobSet js.
func (r *recorder) appearedOf(js, kind string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.appeared[js][kind]
}

// statuses are the statuses the JobSet js showed in this cluster, in order.
func (r *recorder) statuses(js string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, c := range r.timeline {
		if c.jobSet == js && c.kind == "status" {
			out = append(out, c.status)
		}
	}
	return out
}

// podMoments are when the pod whose name starts with prefix was first seen bound and succeeded.
func (r *recorder) podMoments(prefix string) (bound, done time.Duration, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for name, b := range r.bound {
		if strings.HasPrefix(name, prefix) {
			return b, r.done[name], true
		}
	}
	return 0, 0, false
}

// report logs the timeline of the JobSet js in this cluster and a summary of the counts: the
// most live at once and how many appeared, per kind.
func (r *recorder) report(t *testing.T, js string) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	var b strings.Builder
	fmt.Fprintf(&b, "%s, JobSet %s: the most live at once / appeared over the test:", r.cluster, js)
	for _, k := range recorded {
		fmt.Fprintf(&b, " %s %d/%d", k.name, r.most[js][k.name], r.appeared[js][k.name])
	}
	b.WriteString("\n  timeline (live counts after each change):")
	counts := map[string]int{}
	for _, c := range r.timeline {
		if c.jobSet != js {
			continue
		}
		if c.kind == "status" {
			fmt.Fprintf(&b, "\n  %6.1fs  status: %s", c.at.Seconds(), c.status)
			continue
		}
		counts[c.kind] = c.count
		var parts []string
		for _, k := range recorded {
			if n, ok := counts[k.name]; ok {
				parts = append(parts, fmt.Sprintf("%s=%d", k.name, n))
			}
		}
		fmt.Fprintf(&b, "\n  %6.1fs  %s", c.at.Seconds(), strings.Join(parts, " "))
	}
	t.Log(b.String())
}

// kindsSeen are the kinds of which any object appeared for js.
func (r *recorder) kindsSeen(js string, kinds []string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, k := range kinds {
		if r.appeared[js][k] > 0 {
			out = append(out, fmt.Sprintf("%s %d", k, r.appeared[js][k]))
		}
	}
	return slices.Clip(out)
}
